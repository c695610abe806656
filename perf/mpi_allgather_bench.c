/* mpi_allgather_bench: MPI_Allgather over the same size sweep as all_gather_perf, as the
 * reference compare_mpi.sh puts beside xccl. Sizes are total gathered bytes of 32-bit words
 * (per-rank count = size / 4 / nranks, rounded down as all_gather_perf rounds them); the time is
 * the mean over ranks of the per-iteration time; every element is checked after one more call
 * on fresh data. Flags: -b minbytes -e maxbytes (K/M/G) -f stepfactor -n iters -w warmup
 * -c check (0/1). */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ParseSize(const char* text, size_t* out) {
  char* end = NULL;
  double value = strtod(text, &end);
  double unit = 1;
  if (end == text || value < 0) return 0;
  switch (*end) {
    case 'K':
    case 'k':
      unit = 1024.0;
      ++end;
      break;
    case 'M':
    case 'm':
      unit = 1024.0 * 1024;
      ++end;
      break;
    case 'G':
    case 'g':
      unit = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default:
      break;
  }
  if (*end != '\0') return 0;
  *out = (size_t)(value * unit);
  return 1;
}

/* Element i of rank r's block: a hash, so a misplaced or stale block never passes. */
static uint32_t Expected(uint64_t seed, int rank, size_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)rank << 48) ^ i;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)(x ^ (x >> 31));
}

static double Now(void) { return MPI_Wtime(); }

int main(int argc, char** argv) {
  size_t min_bytes = 32u << 20, max_bytes = 32u << 20;
  long factor = 2;
  int iters = 20, warmup = 5, check = 1;
  int rank, nranks;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = value != NULL && flag[0] == '-' && flag[1] != '\0' && flag[2] == '\0';
    if (ok) {
      switch (flag[1]) {
        case 'b':
          ok = ParseSize(value, &min_bytes);
          break;
        case 'e':
          ok = ParseSize(value, &max_bytes);
          break;
        case 'f':
          factor = strtol(value, NULL, 0);
          ok = factor >= 2;
          break;
        case 'n':
          iters = atoi(value);
          ok = iters >= 1;
          break;
        case 'w':
          warmup = atoi(value);
          ok = warmup >= 0;
          break;
        case 'c':
          check = atoi(value);
          ok = check >= 0;
          break;
        default:
          ok = 0;
      }
    }
    if (!ok) {
      if (rank == 0) {
        fprintf(stderr,
                "usage: %s [-b minbytes] [-e maxbytes] [-f factor>=2] [-n iters] "
                "[-w warmup] [-c 0/1]\n",
                argv[0]);
      }
      MPI_Finalize();
      return 2;
    }
    ++i;
  }
  if (min_bytes == 0 || min_bytes > max_bytes) {
    if (rank == 0) fprintf(stderr, "need 0 < minbytes <= maxbytes\n");
    MPI_Finalize();
    return 2;
  }

  if (max_bytes / sizeof(uint32_t) / nranks > INT_MAX) {
    if (rank == 0) fprintf(stderr, "maxbytes too large for an int count\n");
    MPI_Finalize();
    return 2;
  }
  /* One spare word keeps malloc(0) out of the picture when the largest count is 0. */
  size_t send_bytes = (max_bytes / sizeof(uint32_t) / nranks + 1) * sizeof(uint32_t);
  size_t recv_bytes = send_bytes * nranks;
  uint32_t* send = malloc(send_bytes);
  uint32_t* recv = malloc(recv_bytes);
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* Touch every page before timing, so first-touch faults are not measured. */
  memset(send, 0, send_bytes);
  memset(recv, 0, recv_bytes);

  if (rank == 0) {
    printf(
        "# mpi_allgather_bench: MPI_Allgather of 32-bit words, nranks %d minBytes %zu "
        "maxBytes %zu step: %ld(factor) warmup iters: %d iters: %d validation: %d\n",
        nranks, min_bytes, max_bytes, factor, warmup, iters, check);
    printf("#\n");
    printf("# %10s  %12s  %7s  %6s  %6s %6s\n", "size", "count", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s  %12s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)",
           "");
    fflush(stdout);
  }

  long errors = 0;
  double bw_sum = 0;
  int bw_count = 0;
  uint64_t seed = 0;
  for (size_t size = min_bytes; size <= max_bytes; size *= (size_t)factor) {
    int count = (int)(size / sizeof(uint32_t) / nranks);
    for (int i = 0; i < warmup; ++i) {
      MPI_Allgather(send, count, MPI_UINT32_T, recv, count, MPI_UINT32_T, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double start = Now();
    for (int i = 0; i < iters; ++i) {
      MPI_Allgather(send, count, MPI_UINT32_T, recv, count, MPI_UINT32_T, MPI_COMM_WORLD);
    }
    double seconds = (Now() - start) / iters, sum = 0;
    MPI_Allreduce(&seconds, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    seconds = sum / nranks;

    long wrong = 0, total_wrong = 0;
    if (check) {
      ++seed;
      size_t n = (size_t)count * nranks;
      for (size_t i = 0; i < n; ++i) recv[i] = ~Expected(seed, (int)(i / count), i % count);
      for (int i = 0; i < count; ++i) send[i] = Expected(seed, rank, (size_t)i);
      MPI_Allgather(send, count, MPI_UINT32_T, recv, count, MPI_UINT32_T, MPI_COMM_WORLD);
      for (size_t i = 0; i < n; ++i)
        wrong += recv[i] != Expected(seed, (int)(i / count), i % count);
      MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      if (wrong) ++errors;
    }
    double bytes = (double)count * sizeof(uint32_t) * nranks;
    double algbw = seconds > 0 ? bytes / 1.0e9 / seconds : 0;
    double busbw = algbw * (nranks - 1) / nranks;
    bw_sum += busbw;
    ++bw_count;
    if (rank == 0) {
      double usec = seconds * 1e6;
      const char* format = usec >= 10000.0 ? "%7.0f" : usec >= 100.0 ? "%7.1f" : "%7.2f";
      char time[32];
      snprintf(time, sizeof(time), format, usec);
      if (check) {
        printf("%12.0f  %12d  %7s  %6.2f  %6.2f  %5ld\n", bytes, count, time, algbw, busbw,
               total_wrong);
      } else {
        printf("%12.0f  %12d  %7s  %6.2f  %6.2f  %5s\n", bytes, count, time, algbw, busbw, "N/A");
      }
      fflush(stdout);
    }
  }

  long total_errors = 0;
  MPI_Allreduce(&errors, &total_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# Out of bounds values : %ld %s\n", total_errors, total_errors ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n", bw_count ? bw_sum / bw_count : 0.0);
    printf("#\n");
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return total_errors ? 1 : 0;
}
