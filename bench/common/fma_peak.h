/* fma_peak.h — this machine's FP32 FMA peak, measured: the widest FMA the CPU runs
 * (AVX-512 if it has it, else AVX2 + FMA; chosen at run time) in a loop of
 * independent accumulators that never touches memory, on `threads` threads at
 * once. The MFU's denominator is the higher of this and OpenBLAS's sgemm peak
 * (bench_kernels peak), so that no kernel fedc runs can exceed it. */
#ifndef FEDC_BENCH_FMA_PEAK_H
#define FEDC_BENCH_FMA_PEAK_H

/* The vector ISA the loop uses: "avx512f", "avx2+fma", or "none" (then the
 * peak is 0 and sgemm's alone counts). */
const char *bench_fma_isa(void);
/* GFLOP/s (an FMA is 2 FLOPs) of `threads` threads (1..64) each running the
 * loop for about `seconds`, started together: all their FLOPs over the slowest
 * one's wall time; the best of `repeats` runs. 0 when the ISA is "none".
 * *cpu_gflops: the best run's sum over the threads of their FLOPs over their own
 * CPU time, the cores' rate while they ran this (on a loaded machine, above the
 * wall figure; on a quiet one, the same). */
double bench_fma_gflops(int threads, double seconds, int repeats, double *cpu_gflops);

#endif
