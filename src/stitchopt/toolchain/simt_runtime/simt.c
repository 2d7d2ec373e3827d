/* Runs one CUDA kernel's device IR, retargeted to the host (toolchain/simt.py), on the CPU: every thread of a
 * block is a fiber, switched only at __syncthreads and the warp operations (shuffles, votes, __syncwarp), so a
 * run is deterministic and two builds of a kernel can be compared output for output. Blocks run one after
 * another; only the blocks the launch lists run (what the others would write stays as the launch set it).
 *
 * The NVVM intrinsics the retargeted IR calls are defined here as __simt_nvvm_<name, dots as underscores>;
 * the retargeted module defines a weak stand-in for each one it calls, which stops the run naming it, so an
 * intrinsic not implemented here fails only a run that reaches it.
 *
 * It reads the launch from stdin (little-endian): "SIMT1", grid x y z (u32), block x y z, the count and linear
 * indices of the blocks to run, the count of arguments and for each its kind (0 a scalar, 1 an input buffer,
 * 2 an output buffer, 3 an OpenMP launch environment whose bytes are its cross-team reduction buffer's), its
 * elements (0 other, 1 float, 2 double), size in bytes (u64) and bytes. It writes each
 * output buffer's size (u64) and bytes to stdout, and exits 0 when every listed block ran; 4 when the kernel
 * trapped; 5 when the emulator cannot run it (an intrinsic it lacks, a deadlock, a stack overflow: a line on
 * stderr says which). A module retargeted with its instructions counted (each block calls __simt_count with
 * its own count) also writes "simt: executed N" to stderr after a clean run: the IR instructions all threads
 * of the listed blocks executed.
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define WARP 32
#define STACK_BYTES (1024 * 1024)
#define GUARD_BYTES (512 * 1024) /* below each stack, unmapped (CUDA's local memory a thread): an overflow stops the run */
#define MAX_ARGUMENTS 64
#define ELEMENT_F32 1 /* an argument's elements, where they are floating point (NaNs made canonical) */
#define ELEMENT_F64 2
#define FAILED 4      /* the kernel trapped: its own behaviour */
#define UNSUPPORTED 5 /* the emulator cannot run it (an intrinsic it lacks, a deadlock, a stack too small) */

enum State { RUNNING, AT_BARRIER, AT_WARP, DONE };
enum WarpOp { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_BFLY, VOTE_ALL, VOTE_ANY, VOTE_UNI, VOTE_BALLOT, WARP_SYNC };

typedef struct {
  uint32_t x, y, z;
} Dim;

typedef struct {
  ucontext_t context;
  Dim tid;
  enum State state;
  enum WarpOp op;
  uint32_t mask, value, b, c, result;
} Fiber;

static Dim grid_dim, block_dim, block_idx;
static Fiber *fibers;
static char *stacks;
static uint32_t threads, current;
static ucontext_t scheduler;
static void *slots[MAX_ARGUMENTS];
static uint64_t executed; /* IR instructions run, where the module counts them */

extern void __simt_entry(void **arguments);
extern const int32_t __simt_reflect_ftz, __simt_arch;

static void stop(int status, const char *what, const char *detail) {
  fprintf(stderr, "simt: %s%s\n", what, detail);
  fflush(stderr);
  _exit(status);
}

static void fail(const char *what, const char *detail) { stop(UNSUPPORTED, what, detail); }

void __simt_count(uint64_t instructions) { executed += instructions; }
void __simt_unsupported(const char *name) { fail("the kernel reached what the emulator cannot run: ", name); }

/* Thread geometry. */
uint32_t __simt_nvvm_read_ptx_sreg_tid_x(void) { return fibers[current].tid.x; }
uint32_t __simt_nvvm_read_ptx_sreg_tid_y(void) { return fibers[current].tid.y; }
uint32_t __simt_nvvm_read_ptx_sreg_tid_z(void) { return fibers[current].tid.z; }
uint32_t __simt_nvvm_read_ptx_sreg_ntid_x(void) { return block_dim.x; }
uint32_t __simt_nvvm_read_ptx_sreg_ntid_y(void) { return block_dim.y; }
uint32_t __simt_nvvm_read_ptx_sreg_ntid_z(void) { return block_dim.z; }
uint32_t __simt_nvvm_read_ptx_sreg_ctaid_x(void) { return block_idx.x; }
uint32_t __simt_nvvm_read_ptx_sreg_ctaid_y(void) { return block_idx.y; }
uint32_t __simt_nvvm_read_ptx_sreg_ctaid_z(void) { return block_idx.z; }
uint32_t __simt_nvvm_read_ptx_sreg_nctaid_x(void) { return grid_dim.x; }
uint32_t __simt_nvvm_read_ptx_sreg_nctaid_y(void) { return grid_dim.y; }
uint32_t __simt_nvvm_read_ptx_sreg_nctaid_z(void) { return grid_dim.z; }
uint32_t __simt_nvvm_read_ptx_sreg_warpsize(void) { return WARP; }
uint32_t __simt_nvvm_read_ptx_sreg_laneid(void) { return current % WARP; }

static void wait_as(enum State state) {
  fibers[current].state = state;
  swapcontext(&fibers[current].context, &scheduler);
}

/* __syncthreads and its named forms: every thread of the block that has not exited meets here. */
void __simt_nvvm_barrier0(void) { wait_as(AT_BARRIER); }
void __simt_nvvm_barrier_sync(uint32_t id) { (void)id, wait_as(AT_BARRIER); }
void __simt_nvvm_barrier_sync_cnt(uint32_t id, uint32_t count) {
  if (count != threads) /* a named barrier of part of the block: not emulated */
    __simt_unsupported("llvm.nvvm.barrier.sync.cnt of part of a block");
  (void)id, wait_as(AT_BARRIER);
}

static uint32_t warp_op(enum WarpOp op, uint32_t mask, uint32_t value, uint32_t b, uint32_t c) {
  Fiber *fiber = &fibers[current];
  fiber->op = op, fiber->mask = mask, fiber->value = value, fiber->b = b, fiber->c = c;
  wait_as(AT_WARP);
  return fiber->result;
}

static uint32_t as_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float as_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* Shuffles, votes and __syncwarp: the lanes of a warp named in the mask meet here. */
uint32_t __simt_nvvm_shfl_sync_idx_i32(uint32_t m, uint32_t v, uint32_t b, uint32_t c) {
  return warp_op(SHFL_IDX, m, v, b, c);
}
uint32_t __simt_nvvm_shfl_sync_up_i32(uint32_t m, uint32_t v, uint32_t b, uint32_t c) {
  return warp_op(SHFL_UP, m, v, b, c);
}
uint32_t __simt_nvvm_shfl_sync_down_i32(uint32_t m, uint32_t v, uint32_t b, uint32_t c) {
  return warp_op(SHFL_DOWN, m, v, b, c);
}
uint32_t __simt_nvvm_shfl_sync_bfly_i32(uint32_t m, uint32_t v, uint32_t b, uint32_t c) {
  return warp_op(SHFL_BFLY, m, v, b, c);
}
float __simt_nvvm_shfl_sync_idx_f32(uint32_t m, float v, uint32_t b, uint32_t c) {
  return as_float(warp_op(SHFL_IDX, m, as_bits(v), b, c));
}
float __simt_nvvm_shfl_sync_up_f32(uint32_t m, float v, uint32_t b, uint32_t c) {
  return as_float(warp_op(SHFL_UP, m, as_bits(v), b, c));
}
float __simt_nvvm_shfl_sync_down_f32(uint32_t m, float v, uint32_t b, uint32_t c) {
  return as_float(warp_op(SHFL_DOWN, m, as_bits(v), b, c));
}
float __simt_nvvm_shfl_sync_bfly_f32(uint32_t m, float v, uint32_t b, uint32_t c) {
  return as_float(warp_op(SHFL_BFLY, m, as_bits(v), b, c));
}
_Bool __simt_nvvm_vote_all_sync(uint32_t m, _Bool p) { return warp_op(VOTE_ALL, m, p, 0, 0); }
_Bool __simt_nvvm_vote_any_sync(uint32_t m, _Bool p) { return warp_op(VOTE_ANY, m, p, 0, 0); }
_Bool __simt_nvvm_vote_uni_sync(uint32_t m, _Bool p) { return warp_op(VOTE_UNI, m, p, 0, 0); }
uint32_t __simt_nvvm_vote_ballot_sync(uint32_t m, _Bool p) { return warp_op(VOTE_BALLOT, m, p, 0, 0); }
void __simt_nvvm_bar_warp_sync(uint32_t m) { warp_op(WARP_SYNC, m, 0, 0, 0); }


/* PTX's atom.inc: the old value, the new one wrapping to 0 past `limit`. Atomic as it is: fibers switch only at
 * barriers and warp operations. */
uint32_t __simt_nvvm_atomic_load_inc_32_p0(uint32_t *at, uint32_t limit) {
  uint32_t old = *at;
  *at = old >= limit ? 0 : old + 1;
  return old;
}

/* Fences order memory between threads that run one at a time here: nothing to do. */
void __simt_nvvm_membar_cta(void) {}
void __simt_nvvm_membar_gl(void) {}
void __simt_nvvm_membar_sys(void) {}

/* libdevice's arithmetic: rounding to nearest as the host rounds; approximations by the exact function (the same
 * for every build compared); flush-to-zero where the name asks for it. */
static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }
#define UNARY(name, expr)                                                                                      \
  float __simt_nvvm_##name##_f(float x) { return (expr); }                                                     \
  float __simt_nvvm_##name##_ftz_f(float x) {                                                                  \
    x = ftz(x);                                                                                                \
    return ftz(expr);                                                                                          \
  }
#define BINARY(name, expr)                                                                                     \
  float __simt_nvvm_##name##_f(float x, float y) { return (expr); }                                            \
  float __simt_nvvm_##name##_ftz_f(float x, float y) {                                                         \
    x = ftz(x), y = ftz(y);                                                                                    \
    return ftz(expr);                                                                                          \
  }
UNARY(fabs, fabsf(x))
UNARY(ex2_approx, exp2f(x))
UNARY(lg2_approx, log2f(x))
UNARY(sin_approx, sinf(x))
UNARY(cos_approx, cosf(x))
UNARY(sqrt_rn, sqrtf(x))
UNARY(sqrt_approx, sqrtf(x))
UNARY(rsqrt_approx, 1.0f / sqrtf(x))
UNARY(rcp_rn, 1.0f / x)
UNARY(rcp_approx, 1.0f / x)
UNARY(saturate, x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f)
UNARY(round, roundf(x))
UNARY(trunc, truncf(x))
UNARY(floor, floorf(x))
UNARY(ceil, ceilf(x))
BINARY(add_rn, x + y)
BINARY(mul_rn, x *y)
BINARY(div_rn, x / y)
BINARY(div_approx, x / y)
BINARY(fmin, fminf(x, y))
BINARY(fmax, fmaxf(x, y))
float __simt_nvvm_fma_rn_f(float x, float y, float z) { return fmaf(x, y, z); }
float __simt_nvvm_fma_rn_ftz_f(float x, float y, float z) { return ftz(fmaf(ftz(x), ftz(y), ftz(z))); }
/* The directed roundings under the host's rounding mode set for the one operation. */
static float fma_rounded(float x, float y, float z, int mode) {
#pragma STDC FENV_ACCESS ON
  int saved = fegetround();
  fesetround(mode);
  float result = fmaf(x, y, z);
  fesetround(saved);
  return result;
}
float __simt_nvvm_fma_rm_f(float x, float y, float z) { return fma_rounded(x, y, z, FE_DOWNWARD); }
float __simt_nvvm_fma_rm_ftz_f(float x, float y, float z) {
  return ftz(fma_rounded(ftz(x), ftz(y), ftz(z), FE_DOWNWARD));
}
float __simt_nvvm_fma_rp_f(float x, float y, float z) { return fma_rounded(x, y, z, FE_UPWARD); }
float __simt_nvvm_fma_rp_ftz_f(float x, float y, float z) {
  return ftz(fma_rounded(ftz(x), ftz(y), ftz(z), FE_UPWARD));
}
float __simt_nvvm_fma_rz_f(float x, float y, float z) { return fma_rounded(x, y, z, FE_TOWARDZERO); }
float __simt_nvvm_fma_rz_ftz_f(float x, float y, float z) {
  return ftz(fma_rounded(ftz(x), ftz(y), ftz(z), FE_TOWARDZERO));
}
/* Sums and products rounded once as an fma rounds x * 1 + y and x * y + 0 (a zero of the sign that keeps an exact
 * zero's, as the product's own rounding would). */
static float add_rounded(float x, float y, int mode) { return fma_rounded(x, 1.0f, y, mode); }
static float mul_rounded(float x, float y, int mode) {
  return fma_rounded(x, y, mode == FE_DOWNWARD ? 0.0f : -0.0f, mode);
}
#define DIRECTED(operation, suffix, mode)                                                                      \
  float __simt_nvvm_##operation##_##suffix##_f(float x, float y) { return operation##_rounded(x, y, mode); }   \
  float __simt_nvvm_##operation##_##suffix##_ftz_f(float x, float y) {                                         \
    return ftz(operation##_rounded(ftz(x), ftz(y), mode));                                                     \
  }
DIRECTED(add, rz, FE_TOWARDZERO)
DIRECTED(add, rm, FE_DOWNWARD)
DIRECTED(add, rp, FE_UPWARD)
DIRECTED(mul, rz, FE_TOWARDZERO)
DIRECTED(mul, rm, FE_DOWNWARD)
DIRECTED(mul, rp, FE_UPWARD)
/* PTX's conversions to integers saturate and give 0 for NaN (C leaves both undefined). */
static int32_t to_i32(double x) {
  if (isnan(x))
    return 0;
  return x <= INT32_MIN ? INT32_MIN : x >= INT32_MAX ? INT32_MAX : (int32_t)x;
}
int32_t __simt_nvvm_f2i_rz(float x) { return to_i32(truncf(x)); }
int32_t __simt_nvvm_f2i_rn(float x) { return to_i32(rintf(x)); }
int32_t __simt_nvvm_f2i_rz_ftz(float x) { return to_i32(truncf(ftz(x))); }
int32_t __simt_nvvm_f2i_rn_ftz(float x) { return to_i32(rintf(ftz(x))); }
double __simt_nvvm_fabs_d(double x) { return fabs(x); }
double __simt_nvvm_add_rn_d(double x, double y) { return x + y; }
double __simt_nvvm_mul_rn_d(double x, double y) { return x * y; }
double __simt_nvvm_div_rn_d(double x, double y) { return x / y; }
double __simt_nvvm_fma_rn_d(double x, double y, double z) { return fma(x, y, z); }
double __simt_nvvm_sqrt_rn_d(double x) { return sqrt(x); }
double __simt_nvvm_rcp_rn_d(double x) { return 1.0 / x; }
double __simt_nvvm_rcp_approx_ftz_d(double x) { return 1.0 / x; }
double __simt_nvvm_rsqrt_approx_d(double x) { return 1.0 / sqrt(x); }
double __simt_nvvm_fmin_d(double x, double y) { return fmin(x, y); }
double __simt_nvvm_fmax_d(double x, double y) { return fmax(x, y); }
double __simt_nvvm_round_d(double x) { return round(x); }
double __simt_nvvm_trunc_d(double x) { return trunc(x); }
double __simt_nvvm_floor_d(double x) { return floor(x); }
double __simt_nvvm_ceil_d(double x) { return ceil(x); }
int32_t __simt_nvvm_d2i_hi(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  return (int32_t)(bits >> 32);
}
int32_t __simt_nvvm_d2i_lo(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  return (int32_t)bits;
}
double __simt_nvvm_lohi_i2d(int32_t lo, int32_t hi) {
  uint64_t bits = (uint64_t)(uint32_t)hi << 32 | (uint32_t)lo;
  double x;
  memcpy(&x, &bits, sizeof x);
  return x;
}
int32_t __simt_nvvm_d2i_rz(double x) { return to_i32(trunc(x)); }
int32_t __simt_nvvm_d2i_rn(double x) { return to_i32(rint(x)); }
int32_t __simt_nvvm_mulhi_i(int32_t x, int32_t y) { return (int32_t)(((int64_t)x * y) >> 32); }
uint32_t __simt_nvvm_mulhi_ui(uint32_t x, uint32_t y) { return (uint32_t)(((uint64_t)x * y) >> 32); }
int32_t __simt_nvvm_mul24_i(int32_t x, int32_t y) {
  return (int32_t)((int64_t)(x << 8 >> 8) * (int64_t)(y << 8 >> 8));
}
uint32_t __simt_nvvm_mul24_ui(uint32_t x, uint32_t y) { return (x & 0xffffff) * (y & 0xffffff); }

/* What clang's NVVMReflect answers, from the module the retargeting read. */
int32_t __nvvm_reflect(const char *name) {
  if (strcmp(name, "__CUDA_FTZ") == 0)
    return __simt_reflect_ftz;
  if (strcmp(name, "__CUDA_ARCH") == 0)
    return __simt_arch * 10;
  return 0;
}

void __simt_trap(void) { stop(FAILED, "the kernel trapped", ""); }

/* CUDA's device assert: a failed one is the kernel's own behaviour, as a trap. */
void __assertfail(const char *message, const char *file, uint32_t line, const char *function, size_t size) {
  (void)file, (void)line, (void)function, (void)size;
  stop(FAILED, "the kernel failed an assertion: ", message);
}

/* PTX's shfl.sync: the lane each lane reads, or its own when out of its segment. */
static uint32_t shuffled(const Fiber *fiber, uint32_t lane, uint32_t first) {
  uint32_t clamp = fiber->c & 0x1f, segment = (fiber->c >> 8) & 0x1f;
  uint32_t b = fiber->b & 0x1f; /* PTX reads bval[4:0] */
  uint32_t max_lane = (lane & segment) | (clamp & ~segment), min_lane = lane & segment, source = lane;
  int inside = 0;
  switch (fiber->op) {
  case SHFL_UP:
    source = lane - b, inside = (int32_t)source >= (int32_t)max_lane;
    break;
  case SHFL_DOWN:
    source = lane + b, inside = source <= max_lane;
    break;
  case SHFL_BFLY:
    source = lane ^ b, inside = source <= max_lane;
    break;
  default:
    source = min_lane | (b & ~segment), inside = source <= max_lane;
    break;
  }
  if (!inside || first + source >= threads)
    source = lane;
  return fibers[first + source].value;
}

/* The lanes of a warp operation led by `leader` (its mask's lanes that have not exited), when all have arrived at
 * the same operation with the same mask (CUDA's rule for the *_sync intrinsics); 0 while some have not. */
static uint32_t arrived_group(uint32_t first, uint32_t end, uint32_t leader) {
  uint32_t mask = fibers[leader].mask, members = 0;
  for (uint32_t t = first; t < end; ++t) {
    if (!(mask >> (t - first) & 1) || fibers[t].state == DONE)
      continue;
    if (fibers[t].state != AT_WARP || fibers[t].op != fibers[leader].op || fibers[t].mask != mask)
      return 0;
    members |= 1u << (t - first);
  }
  return members;
}

/* Completes one warp operation whose lanes have all arrived; 1 when one did. */
static int release_warp(uint32_t first) {
  uint32_t end = first + WARP < threads ? first + WARP : threads, members = 0, ballot = 0;
  for (uint32_t leader = first; leader < end && !members; ++leader)
    if (fibers[leader].state == AT_WARP)
      members = arrived_group(first, end, leader);
  if (!members)
    return 0;
  for (uint32_t t = first; t < end; ++t)
    if (members >> (t - first) & 1)
      ballot |= (uint32_t)(fibers[t].value != 0) << (t - first);
  for (uint32_t t = first; t < end; ++t) {
    if (!(members >> (t - first) & 1))
      continue;
    Fiber *fiber = &fibers[t];
    switch (fiber->op) {
    case VOTE_ALL:
      fiber->result = ballot == members;
      break;
    case VOTE_ANY:
      fiber->result = ballot != 0;
      break;
    case VOTE_UNI:
      fiber->result = ballot == 0 || ballot == members;
      break;
    case VOTE_BALLOT:
      fiber->result = ballot;
      break;
    case WARP_SYNC:
      fiber->result = 0;
      break;
    default:
      fiber->result = shuffled(fiber, t - first, first);
    }
  }
  for (uint32_t t = first; t < end; ++t)
    if (members >> (t - first) & 1)
      fibers[t].state = RUNNING;
  return 1;
}

static const size_t SLOT_BYTES = GUARD_BYTES + STACK_BYTES;

/* A fault in the running thread's guard is a stack too small for the kernel, not the kernel's fault; any other
 * fault (another thread's guard is above this stack's top: a write past a local array) is the kernel's and kills
 * the run as it would without the handler. */
static void on_fault(int signal_number, siginfo_t *info, void *context) {
  (void)context;
  char *at = info->si_addr;
  char *guard = stacks + (size_t)current * SLOT_BYTES; /* the running thread's own, below its stack */
  if (stacks && at >= guard && at < guard + GUARD_BYTES) {
    static const char message[] = "simt: a thread overflowed its stack (1 MiB)\n";
    if (write(2, message, sizeof message - 1) < 0)
      _exit(UNSUPPORTED);
    _exit(UNSUPPORTED);
  }
  signal(signal_number, SIG_DFL); /* the fault repeats on return and ends the run */
}

static void make_stacks(void) {
  stacks = mmap(NULL, (size_t)threads * SLOT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
  if (stacks == MAP_FAILED)
    fail("out of memory for the threads' stacks", "");
  for (uint32_t t = 0; t < threads; ++t)
    if (mprotect(stacks + (size_t)t * SLOT_BYTES, GUARD_BYTES, PROT_NONE) != 0)
      fail("cannot protect a stack's guard", "");
  static char handler_stack[1 << 16];
  stack_t alternate = {.ss_sp = handler_stack, .ss_size = sizeof handler_stack, .ss_flags = 0};
  struct sigaction action = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
  sigemptyset(&action.sa_mask);
  if (sigaltstack(&alternate, NULL) != 0 || sigaction(SIGSEGV, &action, NULL) != 0)
    fail("cannot watch the stacks' guards", "");
}

static void thread_main(void) {
  __simt_entry(slots);
  wait_as(DONE);
}

static void run_block(void) {
  for (uint32_t t = 0; t < threads; ++t) {
    Fiber *fiber = &fibers[t];
    uint32_t plane = block_dim.x * block_dim.y;
    fiber->tid = (Dim){t % block_dim.x, t / block_dim.x % block_dim.y, t / plane};
    fiber->state = RUNNING;
    getcontext(&fiber->context);
    fiber->context.uc_stack.ss_sp = stacks + (size_t)t * SLOT_BYTES + GUARD_BYTES;
    fiber->context.uc_stack.ss_size = STACK_BYTES;
    fiber->context.uc_link = NULL;
    makecontext(&fiber->context, thread_main, 0);
  }
  for (;;) {
    for (uint32_t t = 0; t < threads; ++t)
      if (fibers[t].state == RUNNING) {
        current = t;
        swapcontext(&scheduler, &fibers[t].context);
      }
    int released = 0, waiting = 0, all_at_barrier = 1;
    for (uint32_t first = 0; first < threads; first += WARP)
      released |= release_warp(first);
    if (released)
      continue;
    for (uint32_t t = 0; t < threads; ++t) {
      waiting |= fibers[t].state != DONE;
      all_at_barrier &= fibers[t].state == DONE || fibers[t].state == AT_BARRIER;
    }
    if (!waiting)
      return;
    if (!all_at_barrier)
      fail("the kernel deadlocked: threads wait at a warp operation that not all its lanes reach", "");
    for (uint32_t t = 0; t < threads; ++t)
      if (fibers[t].state == AT_BARRIER)
        fibers[t].state = RUNNING;
  }
}

/* Every NaN of a float output as one quiet NaN: LLVM leaves a NaN's sign and payload unspecified, so two correct
 * builds may write different ones. */
static void canonical_nans(void *buffer, uint64_t bytes, uint32_t element) {
  if (element == ELEMENT_F32)
    for (uint64_t at = 0; at + 4 <= bytes; at += 4) {
      float value;
      memcpy(&value, (char *)buffer + at, 4);
      if (isnan(value))
        memcpy((char *)buffer + at, &(uint32_t){0x7fc00000u}, 4);
    }
  if (element == ELEMENT_F64)
    for (uint64_t at = 0; at + 8 <= bytes; at += 8) {
      double value;
      memcpy(&value, (char *)buffer + at, 8);
      if (isnan(value))
        memcpy((char *)buffer + at, &(uint64_t){0x7ff8000000000000ull}, 8);
    }
}

static void read_exactly(FILE *file, void *into, size_t bytes) {
  if (fread(into, 1, bytes, file) != bytes)
    fail("the launch file is truncated", "");
}

static void *read_buffer(FILE *file, uint64_t bytes) {
  void *buffer = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!buffer)
    fail("out of memory for a buffer", "");
  read_exactly(file, buffer, bytes);
  return buffer;
}

/* The OpenMP device runtime's KernelLaunchEnvironmentTy, which a region's first parameter points at: LLVM 19's
 * layout (Debian's libomp-19-dev runtime). A runtime that reads another finds no reduction buffer, and its
 * region's -O3 build then faults: not run, nothing claimed. */
typedef struct {
  uint32_t reduction_count, reduction_iterations; /* counters of the teams done with the cross-team reduction */
  void *reduction_buffer;                         /* a record a team */
} LaunchEnvironment;

static uint32_t read_u32(FILE *file) {
  uint32_t value;
  read_exactly(file, &value, sizeof value);
  return value;
}

int main(void) {
  FILE *launch = stdin;
  char magic[5];
  read_exactly(launch, magic, sizeof magic);
  if (memcmp(magic, "SIMT1", sizeof magic) != 0)
    fail("stdin holds no launch", "");
  grid_dim = (Dim){read_u32(launch), read_u32(launch), read_u32(launch)};
  block_dim = (Dim){read_u32(launch), read_u32(launch), read_u32(launch)};
  uint32_t blocks = read_u32(launch);
  uint32_t *block_list = malloc(sizeof(uint32_t) * (blocks ? blocks : 1));
  for (uint32_t i = 0; i < blocks; ++i)
    block_list[i] = read_u32(launch);
  uint32_t arguments = read_u32(launch);
  if (arguments > MAX_ARGUMENTS)
    fail("too many kernel arguments", "");
  uint32_t kinds[MAX_ARGUMENTS], elements[MAX_ARGUMENTS];
  uint64_t sizes[MAX_ARGUMENTS];
  for (uint32_t i = 0; i < arguments; ++i) {
    kinds[i] = read_u32(launch);
    elements[i] = read_u32(launch);
    read_exactly(launch, &sizes[i], sizeof sizes[i]);
    if (kinds[i] == 0) {
      slots[i] = calloc(1, 8);
      if (sizes[i] > 8)
        fail("a scalar argument wider than 8 bytes", "");
      read_exactly(launch, slots[i], sizes[i]);
    } else {
      void *buffer = read_buffer(launch, sizes[i]);
      if (kinds[i] == 3) {
        LaunchEnvironment *environment = calloc(1, sizeof *environment);
        if (!environment)
          fail("out of memory for a launch environment", "");
        environment->reduction_buffer = buffer;
        buffer = environment;
      }
      slots[i] = malloc(sizeof(void *));
      memcpy(slots[i], &buffer, sizeof buffer);
    }
  }
  threads = block_dim.x * block_dim.y * block_dim.z;
  if (threads == 0 || threads > 1024)
    fail("a block has 1 to 1024 threads", "");
  fibers = calloc(threads, sizeof(Fiber));
  if (!fibers)
    fail("out of memory for the threads", "");
  make_stacks();
  for (uint32_t i = 0; i < blocks; ++i) {
    uint32_t linear = block_list[i];
    block_idx = (Dim){linear % grid_dim.x, linear / grid_dim.x % grid_dim.y, linear / (grid_dim.x * grid_dim.y)};
    run_block();
  }
  for (uint32_t i = 0; i < arguments; ++i)
    if (kinds[i] == 2) {
      void *buffer;
      memcpy(&buffer, slots[i], sizeof buffer);
      canonical_nans(buffer, sizes[i], elements[i]);
      fwrite(&sizes[i], sizeof sizes[i], 1, stdout);
      fwrite(buffer, 1, sizes[i], stdout);
    }
  if (executed)
    fprintf(stderr, "simt: executed %llu\n", (unsigned long long)executed);
  return fflush(stdout) == 0 ? 0 : UNSUPPORTED;
}
