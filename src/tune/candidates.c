/* The candidates: which configurations a tune tries, the reference cases
 * they are checked on, building and validating one, and the candidates
 * that run the same code as another (same_as_default). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/defaults.h"
#include "core/error.h"
#include "hw/hw_impl.h"
#include "runtime/eager.h"
#include "tune/tuner_impl.h"

const char *ait_cand_status_name(ait_cand_status s) {
  static const char *const names[] = {"pending",
                                      "selected",
                                      "ok",
                                      "unsupported",
                                      "build_failed",
                                      "incorrect",
                                      "slower_than_baseline",
                                      "over_budget",
                                      "same_as_default",
                                      "slower_than_more_precise"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

void ait_tune_free_outputs(ait_tensor **out, int n) {
  for (int i = 0; i < n; i++) {
    ait_tensor_free(out[i]);
    out[i] = NULL;
  }
}

/* The reference outputs for every sample, and for each dynamic axis at its
 * min and max (the sample resized along it). */
ait_status ait_tune_make_cases(ait_tuner *t) {
  ait_module *m = t->m;
  const ait_graph *g = m->model->graph;
  int cap = m->n_samples + 2 * m->spec.n_axes;
  t->cases = calloc((size_t)cap + 1, sizeof *t->cases);
  if (!t->cases) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int c = 0; c < cap; c++) {
    ait_ref_case *rc = &t->cases[t->n_cases];
    if (c < m->n_samples) {
      AIT_TRY(ait_sample_clone(&m->samples[c], &rc->in));
      snprintf(rc->label, sizeof rc->label, "sample %d", c);
    } else {
      int a = (c - m->n_samples) / 2;
      const ait_axis *ax = &m->spec.axes[a];
      int64_t size = (c - m->n_samples) % 2 ? ax->max : ax->min;
      /* the batch axis is also exercised by profiling; here min and max of
       * every axis that the samples vary, plus batch 1 and the largest batch */
      if (ax->min == ax->max && !ax->is_batch) continue;
      if (ax->is_batch) size = (c - m->n_samples) % 2 ? (ax->max > 2 ? ax->max : 2) : 1;
      AIT_TRY(ait_sample_resize(&m->samples[0], &m->spec, a, size, &rc->in));
      snprintf(rc->label, sizeof rc->label, "%s axis %d of input %d at %s %lld",
               ax->sym[0] ? ax->sym : "dynamic", ax->axis, ax->input,
               (c - m->n_samples) % 2 ? "max" : "min", (long long)size);
    }
    rc->want = calloc((size_t)g->n_outputs + 1, sizeof *rc->want);
    if (!rc->want) return ait_err(AIT_E_NOMEM, "out of memory");
    t->n_cases++;
    ait_status st =
        ait_eager_run(g, (const ait_tensor *const *)rc->in.inputs, rc->in.n_inputs, rc->want);
    if (st) return ait_err_prefix(st, "reference run on %s", rc->label);
  }
  return AIT_OK;
}

void ait_tune_free_cases(ait_tuner *t) {
  int n_out = t->m->model->graph->n_outputs;
  for (int c = 0; c < t->n_cases; c++) {
    ait_sample_free(&t->cases[c].in);
    if (t->cases[c].want) ait_tune_free_outputs(t->cases[c].want, n_out);
    free(t->cases[c].want);
  }
  free(t->cases);
}

/* Compute precision a configuration runs at, for its tolerance: the
 * backend's own answer, else its `dtype` option, else float32. */
ait_dtype ait_tune_compute_dtype(const ait_backend_config *cfg) {
  const char *p = cfg->iface->precision ? cfg->iface->precision(cfg) : NULL;
  for (int i = 0; !p && i < cfg->iface->n_options; i++)
    if (!strcmp(cfg->iface->options[i].name, "dtype")) p = ait_backend_config_get(cfg, "dtype");
  if (!p) return AIT_FLOAT32;
  if (!strcmp(p, "bf16")) return AIT_BFLOAT16;
  if (!strcmp(p, "fp16") || !strcmp(p, "tf32")) return AIT_FLOAT16;
  if (!strcmp(p, "int8") || !strcmp(p, "fp8") || !strcmp(p, "fp4")) return AIT_INT8;
  return AIT_FLOAT32;
}

static bool validate(ait_tuner *t, ait_candidate *c) {
  c->err.top1 = -1; /* until a classifier output is compared */
  const ait_graph *g = t->m->model->graph;
  ait_tolerance tol = ait_tolerance_for(ait_tune_compute_dtype(&c->cfg), t->o);
  c->tol = tol; /* for the report: which bound the numbers met or missed */
  c->compute = ait_tune_compute_dtype(&c->cfg);
  c->validated = true;
  ait_tensor **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
  if (!got) {
    snprintf(c->error, sizeof c->error, "out of memory");
    return false;
  }
  bool ok = true;
  for (int k = 0; k < t->n_cases && ok; k++) {
    ait_ref_case *rc = &t->cases[k];
    ait_status st = c->run.iface->infer(c->run.state, (const ait_tensor *const *)rc->in.inputs,
                                        rc->in.n_inputs, got);
    if (st) {
      snprintf(c->error, sizeof c->error, "inference failed on %s: %s", rc->label,
               ait_last_error());
      ok = false;
      break;
    }
    for (int i = 0; i < g->n_outputs && ok; i++) {
      char why[400];
      if (!ait_outputs_match(got[i], rc->want[i], &tol, &c->err, why, sizeof why)) {
        snprintf(c->error, sizeof c->error, "output %d ('%s') on %s: %s", i,
                 g->values[g->outputs[i]].name, rc->label, why);
        ok = false;
      }
    }
    ait_tune_free_outputs(got, g->n_outputs);
  }
  free(got);
  return ok;
}

/* Critical memory pressure refuses new builds (policy table in src/hw/). */
static bool memory_refuses(ait_tuner *t, ait_candidate *c) {
  ait_mem_reading now;
  const ait_mem_reading *r = t->o->mem_reading;
  if (!r && ait_mem_read(&now) == AIT_OK) r = &now;
  if (!r || !ait_mem_policy_for(ait_mem_pressure(r, &t->mem_thr))->refuse_builds) return false;
  char desc[256];
  c->status = AIT_CAND_BUILD_FAILED;
  snprintf(c->error, sizeof c->error, "not built: memory pressure is %s",
           ait_mem_describe(r, &t->mem_thr, desc, sizeof desc));
  return true;
}

/* The caller's tensors live on the device (io_mem): only a backend that
 * reads device memory can run them, and it is timed by its device clock
 * (no host transfers, which the caller does not pay). */
static ait_status device_io(ait_candidate *c) {
  const ait_backend_iface *f = c->run.iface;
  if (!f->set_io || !f->last_device_ms) {
    c->status = AIT_CAND_UNSUPPORTED;
    snprintf(c->error, sizeof c->error,
             "%s takes host memory only%s, and the inputs live on the device (io_mem)",
             c->cfg.iface->name, c->run.n_segments > 1 ? " when partitioned" : "");
    return AIT_E_UNSUPPORTED;
  }
  ait_backend_io io = {.out_mem = AIT_MEM_HOST, .time_device = true};
  ait_status st = f->set_io(c->run.state, &io);
  if (st) {
    c->status = AIT_CAND_BUILD_FAILED;
    snprintf(c->error, sizeof c->error, "%s", ait_last_error());
  }
  return st;
}

ait_status ait_tune_build_candidate(ait_tuner *t, ait_candidate *c) {
  ait_module *m = t->m;
  const ait_graph *g = m->model->graph;
  char why[512];
  if (memory_refuses(t, c)) return ait_err(AIT_E_NOMEM, "%s", c->error);
  if (!c->cfg.iface->available(why, sizeof why)) {
    c->status = AIT_CAND_UNSUPPORTED;
    snprintf(c->error, sizeof c->error, "not available on this machine: %s", why);
    return AIT_E_UNSUPPORTED;
  }
  ait_module_logf(m, 0, "[%s] build", c->desc);
  const ait_tensor *const *samples[AIT_MAX_SAMPLES];
  for (int s = 0; s < m->n_samples; s++)
    samples[s] = (const ait_tensor *const *)m->samples[s].inputs;
  ait_build_info info = {&m->spec, samples,           m->n_samples,
                         NULL,     t->o->node_filter, t->o->node_filter_user};
  double t0 = ait_now();
  ait_status st = ait_runner_build(&c->cfg, g, &info, &c->run);
  c->build_s = ait_now() - t0;
  c->nodes_supported = c->run.nodes_primary;
  c->nodes_total = c->run.nodes_total;
  if (st) {
    c->status = st == AIT_E_UNSUPPORTED ? AIT_CAND_UNSUPPORTED : AIT_CAND_BUILD_FAILED;
    snprintf(c->error, sizeof c->error, "%s", ait_last_error());
    c->run.state = NULL;
    return st;
  }
  if (c->run.n_segments > 1)
    ait_module_logf(m, 0, "[%s] runs %d of %d nodes in %d segments; the rest on %s", c->desc,
                    c->run.nodes_primary, c->run.nodes_total, c->run.n_segments, c->run.fallback);
  if (t->o->io_mem == AIT_MEM_CUDA && (st = device_io(c))) return st;
  ait_module_logf(m, 0, "[%s] validate on %d inputs", c->desc, t->n_cases);
  if (!validate(t, c)) {
    c->status = AIT_CAND_INCORRECT;
    return ait_err(AIT_E_RUNTIME, "%s", c->error);
  }
  return AIT_OK;
}

/* A measured candidate whose runs never exercised one of its options (the
 * backend says which: unused_option) runs the same code as an earlier one
 * with that option at its default; timing both only lets noise pick
 * between them. Returns that candidate's index, or -1. Configurations
 * compare by their canonical descriptions (ait_backend_describe: the
 * non-default options, sorted), as each candidate's desc holds. */
int ait_tune_same_as_earlier(const ait_candidate *cands, int i, char *why, size_t n) {
  const ait_candidate *c = &cands[i];
  const ait_backend_iface *f = c->cfg.iface;
  if (!f->unused_option || c->run.iface != f || !c->run.state) return -1; /* partitioned: no */
  const char *opt = f->unused_option(c->run.state, why, n);
  if (!opt) return -1;
  ait_backend_config d = c->cfg; /* c's configuration with opt back at its default */
  d.n = 0;
  for (int k = 0; k < c->cfg.n; k++)
    if (strcmp(c->cfg.keys[k], opt)) {
      memcpy(d.keys[d.n], c->cfg.keys[k], sizeof d.keys[0]);
      memcpy(d.vals[d.n++], c->cfg.vals[k], sizeof d.vals[0]);
    }
  char desc[sizeof c->desc];
  ait_backend_describe(&d, desc, sizeof desc);
  for (int j = 0; j < i; j++) {
    const ait_candidate *o = &cands[j];
    bool judged = o->status == AIT_CAND_OK || o->status == AIT_CAND_SLOWER ||
                  o->status == AIT_CAND_OVER_BUDGET;
    if (judged && o->cfg.iface == f && !strcmp(o->desc, desc)) return j;
  }
  return -1;
}

/* How much a candidate's precision keeps: float32 above the 16-bit floats
 * above int8/fp8. */
int ait_tune_precision_rank(const ait_candidate *c) {
  switch (ait_tune_compute_dtype(&c->cfg)) {
  case AIT_FLOAT32: return 3;
  case AIT_FLOAT16:
  case AIT_BFLOAT16: return 2;
  default: return 1;
  }
}

/* The CPU has int8 dot products (VNNI or AMX-INT8), which int8 candidates need
 * to pay off. */
static bool cpu_has_int8_dot(void) {
  char flags[8192];
  ait_hw_cpuinfo_field("flags", flags, sizeof flags);
  uint32_t f = ait_hw_cpu_features_from_flags(flags);
  return f & (AIT_CPU_AVX512_VNNI | AIT_CPU_AVX_VNNI | AIT_CPU_AMX_INT8);
}

/* --precision: fp32 (default) keeps automatic candidates in float32; auto
 * adds reduced-precision variants when the strategy is after speed or memory
 * is under pressure (hardware support is each backend's supports() to say);
 * any always adds them. Backends the user names are always tried. */
static bool reduced_ok(const ait_tuner *t) {
  const char *p = t->o->precision ? t->o->precision : "fp32";
  if (!strcmp(p, "any")) return true;
  if (strcmp(p, "auto")) return false;
  bool pressure = t->res.mem_policy && t->res.mem_policy->level >= AIT_MEM_MEDIUM;
  return pressure || t->s->pick == AIT_PICK_BEST; /* the strategy is after speed */
}

ait_status ait_tune_candidates(ait_tuner *t, ait_candidate **out, int *n) {
  const ait_tune_options *o = t->o;
  int cap = (o->backends ? (int)o->n_backends : 4 * ait_backend_count()) + 1;
  ait_candidate *c = calloc((size_t)cap + 1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "out of memory");
  int k = 0;
  if (o->backends) {
    for (size_t i = 0; i < o->n_backends; i++) {
      ait_status st = ait_backend_config_parse(o->backends[i], &c[k].cfg);
      if (st) {
        free(c);
        return st;
      }
      ait_backend_describe(&c[k].cfg, c[k].desc, sizeof c[k].desc);
      k++;
    }
  } else { /* every available backend but the baseline itself */
    for (int i = 0; i < ait_backend_count(); i++) {
      const ait_backend_iface *b = ait_backend_at(i);
      char why[256];
      if (!strcmp(b->name, "eager") || !b->available(why, sizeof why)) continue;
      if (b->variants && !b->variants[0]) continue; /* only when named */
      for (int v = 0; k < cap - 1 && (v == 0 || (b->variants && b->variants[v])); v++) {
        if (ait_backend_config_parse(b->variants ? b->variants[v] : b->name, &c[k].cfg) != AIT_OK)
          continue;
        if (ait_tune_compute_dtype(&c[k].cfg) != AIT_FLOAT32 && !reduced_ok(t)) continue;
        ait_backend_describe(&c[k].cfg, c[k].desc, sizeof c[k].desc);
        k++;
      }
    }
  }
  /* candidates the registry adds on its own (backends/defaults.h): under
   * memory pressure, or with reduced precision where the CPU has int8 dot
   * products */
  int n_add;
  const ait_added_candidate *add = ait_backend_added_candidates(&n_add);
  bool pressure = t->res.mem_policy && t->res.mem_policy->add_quantized;
  bool int8 = !o->backends && n_add && reduced_ok(t) && cpu_has_int8_dot();
  for (int i = 0; !o->backends && i < n_add && k < cap; i++) {
    bool want = (pressure && (add[i].when & AIT_ADD_UNDER_PRESSURE)) ||
                (int8 && (add[i].when & AIT_ADD_REDUCED_INT8));
    char why[128];
    if (!want || ait_backend_config_parse(add[i].spec, &c[k].cfg) != AIT_OK ||
        !c[k].cfg.iface->available(why, sizeof why))
      continue;
    ait_backend_describe(&c[k].cfg, c[k].desc, sizeof c[k].desc);
    ait_module_logf(t->m, 0, "%s: adding %s", pressure ? "memory pressure" : "precision auto",
                    c[k].desc);
    k++;
  }
  *out = c;
  *n = k;
  return AIT_OK;
}
