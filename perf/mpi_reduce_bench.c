/* mpi_reduce_bench: MPI_Reduce_scatter_block or MPI_Allreduce (sum of floats) over the same size
 * sweep as reduce_scatter_perf and all_reduce_perf, as the reference compare_mpi.sh puts beside
 * xccl. Sizes are what those binaries print: reduce_scatter the send buffer (per-rank receive
 * count = size / 4 / nranks, rounded down as they round it), all_reduce the buffer (count =
 * size / 4); busbw = algbw * (n-1)/n and 2(n-1)/n, nccl-tests' factors. The time is the mean over
 * ranks of the per-iteration time; every received element is checked after one more call on
 * fresh data: small integers, so the float sums are exact whatever MPI's order. Flags:
 * -C reduce_scatter|all_reduce (default all_reduce) -b minbytes -e maxbytes (K/M/G)
 * -f stepfactor -n iters -w warmup -c check (0/1). */
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

/* Element i of rank r's input: an integer in [-8, 8] from a hash, so every partial sum of up to
 * 2^20 ranks is an exact float and a missing or doubled contribution shows. */
static float Input(uint64_t seed, int rank, size_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)rank << 48) ^ i;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return (float)((int)((x ^ (x >> 31)) % 17) - 8);
}

static float Expected(uint64_t seed, int nranks, size_t i) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r) sum += Input(seed, r, i);
  return sum;
}

int main(int argc, char** argv) {
  size_t min_bytes = 32u << 20, max_bytes = 32u << 20;
  long factor = 2;
  int iters = 20, warmup = 5, check = 1;
  int scatter = 0; /* 1: MPI_Reduce_scatter_block, 0: MPI_Allreduce */
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
        case 'C':
          scatter = strcmp(value, "reduce_scatter") == 0;
          ok = scatter || strcmp(value, "all_reduce") == 0;
          break;
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
                "usage: %s [-C reduce_scatter|all_reduce] [-b minbytes] [-e maxbytes] "
                "[-f factor>=2] [-n iters] [-w warmup] [-c 0/1]\n",
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
  if (max_bytes / sizeof(float) > INT_MAX) {
    if (rank == 0) fprintf(stderr, "maxbytes too large for an int count\n");
    MPI_Finalize();
    return 2;
  }

  /* The largest row's send and receive buffers, plus one spare element against malloc(0). */
  size_t max_count = max_bytes / sizeof(float);
  size_t send_elems = (scatter ? max_count / nranks * nranks : max_count) + 1;
  size_t recv_elems = (scatter ? max_count / nranks : max_count) + 1;
  float* send = malloc(send_elems * sizeof(float));
  float* recv = malloc(recv_elems * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* Touch every page before timing, so first-touch faults are not measured. */
  memset(send, 0, send_elems * sizeof(float));
  memset(recv, 0, recv_elems * sizeof(float));

  const char* name = scatter ? "MPI_Reduce_scatter_block" : "MPI_Allreduce";
  const double bus_factor = (scatter ? 1.0 : 2.0) * (nranks - 1) / nranks;
  if (rank == 0) {
    printf(
        "# mpi_reduce_bench: %s (sum) of floats, nranks %d minBytes %zu maxBytes %zu "
        "step: %ld(factor) warmup iters: %d iters: %d validation: %d\n",
        name, nranks, min_bytes, max_bytes, factor, warmup, iters, check);
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
    /* count: the call's count argument and the printed one, as the xccl binaries print it. */
    int count = (int)(scatter ? size / sizeof(float) / nranks : size / sizeof(float));
    size_t in_count = scatter ? (size_t)count * nranks : (size_t)count;
    for (int i = 0; i < warmup; ++i) {
      if (scatter) {
        MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else {
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (scatter) {
        MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else {
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
    }
    double seconds = (MPI_Wtime() - start) / iters, sum = 0;
    MPI_Allreduce(&seconds, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    seconds = sum / nranks;

    long wrong = 0, total_wrong = 0;
    if (check) {
      ++seed;
      /* Rank r receives elements first .. first + count of the reduced vector. */
      size_t first = scatter ? (size_t)rank * count : 0;
      for (int i = 0; i < count; ++i) recv[i] = -1.0e30f; /* no sum of the inputs */
      for (size_t i = 0; i < in_count; ++i) send[i] = Input(seed, rank, i);
      if (scatter) {
        MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else {
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      for (int i = 0; i < count; ++i) wrong += recv[i] != Expected(seed, nranks, first + i);
      MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      if (wrong) ++errors;
    }
    double bytes = (double)in_count * sizeof(float);
    double algbw = seconds > 0 ? bytes / 1.0e9 / seconds : 0;
    double busbw = algbw * bus_factor;
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
