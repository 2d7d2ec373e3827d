// N-body: all-pairs gravitational accelerations (softened), tiled through shared memory, and the leapfrog step.
__device__ float3 interact(float4 bi, float4 bj, float3 acc, float soft2) {
  float3 r = make_float3(bj.x - bi.x, bj.y - bi.y, bj.z - bi.z);
  float dist2 = r.x * r.x + r.y * r.y + r.z * r.z + soft2;
  float inv = rsqrtf(dist2);
  float s = bj.w * inv * inv * inv;
  acc.x += r.x * s;
  acc.y += r.y * s;
  acc.z += r.z * s;
  return acc;
}

__global__ void nbody_forces(const float4 *bodies, float3 *acc, int n, float soft2) {
  extern __shared__ float4 tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 me = i < n ? bodies[i] : make_float4(0, 0, 0, 0);
  float3 a = make_float3(0, 0, 0);
  for (int start = 0; start < n; start += blockDim.x) {
    int j = start + threadIdx.x;
    tile[threadIdx.x] = j < n ? bodies[j] : make_float4(0, 0, 0, 0);
    __syncthreads();
    for (int t = 0; t < blockDim.x && start + t < n; ++t) a = interact(me, tile[t], a, soft2);
    __syncthreads();
  }
  if (i < n) acc[i] = a;
}

__global__ void leapfrog(float4 *bodies, float3 *vel, const float3 *acc, int n, float dt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float3 v = vel[i];
  v.x += acc[i].x * dt;
  v.y += acc[i].y * dt;
  v.z += acc[i].z * dt;
  vel[i] = v;
  bodies[i].x += v.x * dt;
  bodies[i].y += v.y * dt;
  bodies[i].z += v.z * dt;
}
