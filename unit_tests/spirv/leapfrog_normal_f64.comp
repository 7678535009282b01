#version 450
// A leapfrog chain shader with the interface eXMC's synthesised shaders have
// (Exmc.NUTS.CustomSynth.MultiRvCustomSpec, called through Nx.Vulkan.NativeV):
// workgroup g runs chain g (its buffers' g-th slices; one workgroup unless batched), thread i
// holds coordinate i; K steps; per-step q, p, gradient and log-density.
// Model: q_i ~ Normal(mu, sigma) for i < d, and y_j ~ Normal(q_(j mod d), 1) for j < n_obs.
// The test fixture leapfrog_normal_f64.spvasm is this file compiled with
//   glslangValidator -V --target-env vulkan1.2 leapfrog_normal_f64.comp -o x.spv && spirv-dis x.spv
#extension GL_ARB_gpu_shader_fp64 : require

layout (local_size_x = 256) in;

layout (push_constant) uniform Push {
    uint   K;
    uint   n_obs;
    uint   d;
    uint   _pad;
    double eps;
    double mu;
    double sigma;
} pc;

layout (std430, binding = 0) readonly  buffer In_q      { double q_init[]; };
layout (std430, binding = 1) readonly  buffer In_p      { double p_init[]; };
layout (std430, binding = 2) readonly  buffer In_extras { double obs_inv_mass[]; };
layout (std430, binding = 3) writeonly buffer Out_q     { double q_chain[]; };
layout (std430, binding = 4) writeonly buffer Out_p     { double p_chain[]; };
layout (std430, binding = 5) writeonly buffer Out_grad  { double grad_chain[]; };
layout (std430, binding = 6) writeonly buffer Out_logp  { double logp_chain[]; };

shared double partial[256];

const double HALF_LOG_2PI = 0.91893853320467274178lf;

double grad_at(uint obs, uint i, double q) {
    double g = -(q - pc.mu) / (pc.sigma * pc.sigma);
    for (uint j = i; j < pc.n_obs; j += pc.d) g += obs_inv_mass[obs + j] - q;
    return g;
}

double logp_at(uint obs, uint i, double q) {
    double z = (q - pc.mu) / pc.sigma;
    double lp = -0.5lf * z * z - log(float(pc.sigma)) - HALF_LOG_2PI;
    for (uint j = i; j < pc.n_obs; j += pc.d) {
        double r = obs_inv_mass[obs + j] - q;
        lp += -0.5lf * r * r - HALF_LOG_2PI;
    }
    return lp;
}

void main() {
    uint tid = gl_LocalInvocationIndex;
    uint inst = gl_WorkGroupID.x;
    uint q_off = inst * pc.d, obs = inst * (pc.n_obs + pc.d), chain = inst * pc.K * pc.d;
    bool in_bounds = tid < pc.d;
    double qi = in_bounds ? q_init[q_off + tid] : 0.0lf;
    double pi = in_bounds ? p_init[q_off + tid] : 0.0lf;
    double mi = in_bounds ? obs_inv_mass[obs + pc.n_obs + tid] : 0.0lf;

    for (uint k = 0u; k < pc.K; k++) {
        double g = in_bounds ? grad_at(obs, tid, qi) : 0.0lf;
        double p_half = pi + 0.5lf * pc.eps * g;
        qi = qi + pc.eps * mi * p_half;
        double gn = in_bounds ? grad_at(obs, tid, qi) : 0.0lf;
        pi = p_half + 0.5lf * pc.eps * gn;
        if (in_bounds) {
            q_chain[chain + k * pc.d + tid] = qi;
            p_chain[chain + k * pc.d + tid] = pi;
            grad_chain[chain + k * pc.d + tid] = gn;
        }
        partial[tid] = in_bounds ? logp_at(obs, tid, qi) : 0.0lf;
        barrier();
        for (uint s = 128u; s > 0u; s /= 2u) {
            if (tid < s) partial[tid] += partial[tid + s];
            barrier();
        }
        if (tid == 0u) logp_chain[inst * pc.K + k] = partial[0];
        barrier();
    }
}
