/* A saved backend state is reloaded and run before it is kept.
 *
 * Saving hands a built state to the backend's own format, or to an engine's
 * export (OpenVINO's compiled model), and nothing proved that what comes
 * back computes what was validated: OpenVINO 2026.4 exports a GRU model that
 * imports and runs with cosine 0.875 against the model it was compiled from
 * (gru_seq at batch 8), while the tuner had judged the compiled one exact.
 * So the tuner keeps the selected state's own outputs on one sample at the
 * tuned batch (the shape a saved plan is for), and every save of that module
 * (ait_module_save, the decision cache, a clone by reload) reloads what it
 * wrote, runs that sample and compares. A state that does not reproduce is
 * saved again in the backend's rebuild form (backend.h: save_rebuild, the
 * graph compiled again on load) and checked again; failing that, the save
 * fails, naming the output. Same backend, same inputs: the default tolerance
 * of its precision holds however loose the user's check was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "tune/module_impl.h"
#include "tune/tuner_impl.h"

void ait_mod_free_check(ait_module *m) {
  ait_sample_free(&m->check_in);
  memset(&m->check_in, 0, sizeof m->check_in);
  if (m->check_out) ait_tune_free_outputs(m->check_out, m->model->graph->n_outputs);
  free(m->check_out);
  m->check_out = NULL;
}

/* outs of one run of r on in, deep-copied (a backend's outputs may borrow
 * its memory until its next run); NULL on failure, *st set */
static ait_tensor **run_copy(const ait_module *m, const ait_runner *r, const ait_sample *in,
                             ait_status *st) {
  int n_out = m->model->graph->n_outputs;
  ait_tensor **got = calloc((size_t)n_out + 1, sizeof *got);
  ait_tensor **keep = calloc((size_t)n_out + 1, sizeof *keep);
  *st = got && keep ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  if (!*st)
    *st = r->iface->infer(r->state, (const ait_tensor *const *)in->inputs, in->n_inputs, got);
  for (int i = 0; !*st && i < n_out; i++)
    if (!(keep[i] = ait_tensor_clone(got[i]))) *st = ait_err(AIT_E_NOMEM, "out of memory");
  if (got) ait_tune_free_outputs(got, n_out);
  free(got);
  if (*st && keep) {
    ait_tune_free_outputs(keep, n_out);
    free(keep);
    keep = NULL;
  }
  return keep;
}

void ait_mod_keep_check(ait_module *m) {
  ait_mod_free_check(m);
  if (m->n_samples < 1 || !m->run.iface) return;
  ait_status st = AIT_OK;
  int axis = -1;
  for (int a = 0; a < m->spec.n_axes; a++)
    if (m->spec.axes[a].is_batch) axis = a;
  if (axis >= 0 && m->batch > 0 && ait_sample_batch(&m->samples[0], &m->spec) != m->batch)
    st = ait_sample_resize(&m->samples[0], &m->spec, axis, m->batch, &m->check_in);
  else
    st = ait_sample_clone(&m->samples[0], &m->check_in);
  if (!st) m->check_out = run_copy(m, &m->run, &m->check_in, &st);
  if (st) {
    /* no check then: saves write what the backend writes, unverified */
    ait_module_logf(m, 1, "cannot keep a check of %s for its saves: %s", m->desc, ait_last_error());
    ait_mod_free_check(m);
  }
}

/* AIT_OK when the state saved in dir, loaded, reproduces m->check_out; the
 * loaded runner goes to *out (NULL: destroyed). why: the first difference */
static ait_status reload_matches(const ait_module *m, const char *dir, ait_runner *out, bool *ok,
                                 char *why, size_t n) {
  const ait_graph *g = m->model->graph;
  ait_runner r = {0};
  *ok = false;
  AIT_TRY(ait_runner_load(&m->cfg, g, dir, &r));
  ait_status st = AIT_OK;
  ait_tensor **got = run_copy(m, &r, &m->check_in, &st);
  if (got) {
    ait_tolerance tol = ait_tolerance_for(ait_tune_compute_dtype(&m->cfg), NULL);
    ait_error_stats es = {.top1 = -1};
    *ok = true;
    for (int i = 0; i < g->n_outputs && *ok; i++) {
      char w[400];
      if (!ait_outputs_match(got[i], m->check_out[i], &tol, &es, w, sizeof w)) {
        snprintf(why, n, "output %d ('%s'): %s", i, g->values[g->outputs[i]].name, w);
        *ok = false;
      }
    }
    ait_tune_free_outputs(got, g->n_outputs);
    free(got);
  }
  if (!st && *ok && out)
    *out = r;
  else
    ait_runner_destroy(&r);
  return st;
}

static ait_status empty_dir(const char *dir) {
  ait_rmtree(dir);
  if (mkdir(dir, 0777) != 0) return ait_err(AIT_E_IO, "cannot create '%s'", dir);
  return AIT_OK;
}

ait_status ait_mod_save_state(const ait_module *m, const char *dir, ait_runner *loaded) {
  const ait_backend_iface *ifc = m->run.iface;
  if (!ifc->save) return ait_err(AIT_E_UNSUPPORTED, "%s cannot save its state", m->desc);
  AIT_TRY(ifc->save(m->run.state, dir));
  if (!m->check_out) /* loaded from a folder (checked when written), or no sample */
    return loaded ? ait_runner_load(&m->cfg, m->model->graph, dir, loaded) : AIT_OK;
  bool ok = false;
  char why[512] = "";
  AIT_TRY(reload_matches(m, dir, loaded, &ok, why, sizeof why));
  if (ok) return AIT_OK;
  if (!ifc->save_rebuild)
    return ait_err(AIT_E_INTERNAL,
                   "the saved state of %s does not reproduce its outputs when loaded again (%s)",
                   m->desc, why);
  ait_module_logf(m, 1,
                  "the saved state of %s does not reproduce its outputs when loaded again (%s); "
                  "saving it without the engine's compiled form, rebuilt on load",
                  m->desc, why);
  AIT_TRY(empty_dir(dir));
  AIT_TRY(ifc->save_rebuild(m->run.state, dir));
  AIT_TRY(reload_matches(m, dir, loaded, &ok, why, sizeof why));
  if (!ok)
    return ait_err(AIT_E_INTERNAL,
                   "the saved state of %s does not reproduce its outputs when loaded again, "
                   "compiled form or not (%s)",
                   m->desc, why);
  return AIT_OK;
}
