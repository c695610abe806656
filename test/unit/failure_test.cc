// SetFailure, the one builder of a PlatformFailure: every field is filled, the message is
// formatted at any length (no fixed buffer cuts it), and the result comes back for `return`.
#include "base/failure.h"

#include <gtest/gtest.h>

#include <string>

namespace xccl {
namespace {

TEST(Failure, FillsEveryFieldAndReturnsTheResult) {
  PlatformFailure failure;
  EXPECT_EQ(failure.result, xcclSuccess);
  EXPECT_EQ(failure.peer, kNoPeer);
  EXPECT_EQ(SetFailure(&failure, xcclTimeout, 3, "timed out after %d ms waiting for rank %d (%s)",
                       250, 3, "barrier"),
            xcclTimeout);
  EXPECT_EQ(failure.result, xcclTimeout);
  EXPECT_EQ(failure.peer, 3);
  EXPECT_EQ(failure.message, "timed out after 250 ms waiting for rank 3 (barrier)");
}

// A second failure replaces all of the first, message included (none of it is appended).
TEST(Failure, ReplacesAnEarlierFailure) {
  PlatformFailure failure;
  SetFailure(&failure, xcclRemoteError, 1, "rank %d died", 1);
  EXPECT_EQ(SetFailure(&failure, xcclInternalError, kNoPeer, "no peer"), xcclInternalError);
  EXPECT_EQ(failure.result, xcclInternalError);
  EXPECT_EQ(failure.peer, kNoPeer);
  EXPECT_EQ(failure.message, "no peer");
}

TEST(Failure, AnEmptyMessageIsEmpty) {
  PlatformFailure failure;
  failure.message = "stale";
  EXPECT_EQ(SetFailure(&failure, xcclSystemError, 0, "%s", ""), xcclSystemError);
  EXPECT_EQ(failure.message, "");
  EXPECT_EQ(failure.peer, 0);
}

// Messages quote other messages (a plugin's error, a hostname) and are not cut at 1 KiB, as a
// fixed buffer would. The reference is built by appending, not by printf.
TEST(Failure, KeepsAMessageLongerThanOneKibibyteWhole) {
  std::string quoted;
  for (int i = 0; quoted.size() < 3000; ++i) quoted += "piece " + std::to_string(i) + "; ";
  const std::string expected =
      "rank 7 failed: " + quoted + "(after " + std::to_string(123456789012345LL) + " ms)";
  ASSERT_GT(expected.size(), 1024u);

  PlatformFailure failure;
  EXPECT_EQ(SetFailure(&failure, xcclRemoteError, 7, "rank %d failed: %s(after %lld ms)", 7,
                       quoted.c_str(), 123456789012345LL),
            xcclRemoteError);
  EXPECT_EQ(failure.result, xcclRemoteError);
  EXPECT_EQ(failure.peer, 7);
  EXPECT_EQ(failure.message.size(), expected.size());
  EXPECT_EQ(failure.message, expected);
}

// No caller passes null today; one that did would get the result back and nothing written.
TEST(Failure, ANullFailureOnlyReturnsTheResult) {
  EXPECT_EQ(SetFailure(nullptr, xcclInvalidUsage, 2, "rank %d", 2), xcclInvalidUsage);
}

}  // namespace
}  // namespace xccl
