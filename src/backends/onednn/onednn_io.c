/* The saved state: weights already reordered into the layouts the
 * primitives chose, so a loaded model does not reorder them again. Folded
 * constants are not saved: folding is cheap and deterministic, and load
 * lowers the graph again (the slot count is checked to match).
 *
 * onednn.bin, in the saved-state format (backends/common/state_io.h; owner
 * "onednn", version DN_VERSION), little-endian sections:
 *   head     u32 sizeof(dnnl_memory_desc_t), u32 oneDNN major, minor,
 *            patch, u32 bf16, u32 slots, u32 entries
 *   weights  entries x { u32 slot, u64 bytes, memory descriptor, data } */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/state_io.h"
#include "backends/onednn/onednn.h"
#include "core/fileio.h"

#define DN_FILE "onednn.bin"
#define DN_OWNER "onednn"
#define DN_VERSION 2u /* 2: the saved-state format */

static ait_status save_locked(const dn_state *s, const char *dir);

/* The weight cache is shared with the state's clones: read under its lock. */
ait_status dn_save(const dn_state *s, const char *dir) {
  pthread_mutex_lock(s->sh->lock);
  ait_status st = save_locked(s, dir);
  pthread_mutex_unlock(s->sh->lock);
  return st;
}

static ait_status save_locked(const dn_state *s, const char *dir) {
  size_t md = sizeof(dnnl_memory_desc_t);
  const dnnl_version_t *v = dnnl_version();
  ait_state_out o;
  ait_state_out_init(&o, DN_OWNER, DN_VERSION);
  ait_state_out_section(&o, "head");
  uint32_t head[7] = {(uint32_t)md, (uint32_t)v->major,   (uint32_t)v->minor,   (uint32_t)v->patch,
                      s->bf16,      (uint32_t)s->n_slots, (uint32_t)s->sh->n_wc};
  ait_state_out_put(&o, head, sizeof head);
  ait_state_out_section(&o, "weights");
  for (int i = 0; i < s->sh->n_wc; i++) {
    ait_state_out_u32(&o, (uint32_t)s->sh->wc[i].slot);
    ait_state_out_u64(&o, s->sh->wc[i].size);
    ait_state_out_put(&o, &s->sh->wc[i].md, md);
    ait_state_out_put(&o, s->sh->wc[i].data, s->sh->wc[i].size);
  }
  char *path = ait_path_join(dir, DN_FILE);
  if (!path) {
    ait_state_out_free(&o);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  ait_status st = ait_state_out_save(&o, path);
  free(path);
  return st;
}

/* A descriptor read from the file must describe a plain or blocked float
 * tensor of the slot's element count before oneDNN looks at it. */
/* A Winograd weight descriptor (conv=winograd): fp32 3x3 weights transformed
 * to alpha x alpha tiles. A loaded descriptor is only used when oneDNN asks for
 * an equal one, so checking its fields and size keeps the bytes in bounds. */
static bool wino_sane(const dnnl_memory_desc_t *md, const ait_tensor *slot, uint64_t bytes) {
  const dnnl_wino_desc_t *w = &md->format_desc.wino_desc;
  if (md->ndims != 4 || md->data_type != dnnl_f32) return false;
  int64_t numel = 1;
  for (int k = 0; k < 4; k++) {
    if (md->dims[k] < 1 || md->dims[k] > (1ll << 24)) return false;
    numel *= md->dims[k];
  }
  return w->r == 3 && (w->alpha == 4 || w->alpha == 6) && w->ic > 0 && w->oc > 0 &&
         numel == ait_tensor_numel(slot) && w->size == bytes &&
         dnnl_memory_desc_get_size(md) == bytes;
}

static bool md_sane(const dnnl_memory_desc_t *md, const ait_tensor *slot, uint64_t bytes) {
  if (md->ndims >= 1 && md->format_kind == dnnl_format_kind_wino) return wino_sane(md, slot, bytes);
  if (md->ndims < 1 || md->ndims > DNNL_MAX_NDIMS || md->format_kind != dnnl_blocked) return false;
  if (md->data_type != dnnl_f32 && md->data_type != dnnl_bf16) return false;
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  if (b->inner_nblks < 0 || b->inner_nblks > DNNL_MAX_NDIMS) return false;
  int64_t numel = 1;
  for (int k = 0; k < md->ndims; k++) {
    if (md->dims[k] < 1 || md->padded_dims[k] < md->dims[k] || md->dims[k] > (1ll << 40))
      return false;
    numel *= md->dims[k];
  }
  for (int k = 0; k < b->inner_nblks; k++)
    if (b->inner_idxs[k] < 0 || b->inner_idxs[k] >= md->ndims || b->inner_blks[k] < 1) return false;
  return numel == ait_tensor_numel(slot) && dnnl_memory_desc_get_size(md) == bytes;
}

static ait_status load_entries(dn_state *s, ait_state_rd *r, uint32_t n) {
  size_t mdsz = sizeof(dnnl_memory_desc_t);
  char what[64];
  for (uint32_t i = 0; i < n; i++) {
    uint32_t slot;
    uint64_t bytes;
    dnnl_memory_desc_t md;
    if (!ait_state_get(r, &slot, 4) || !ait_state_get(r, &bytes, 8) ||
        !ait_state_get(r, &md, mdsz) || bytes > ait_state_left(r)) {
      snprintf(what, sizeof what, "weight %u is cut short", i);
      return ait_state_corrupt(r, what);
    }
    if (slot >= (uint32_t)s->n_slots || !md_sane(&md, s->slots[slot].t, bytes))
      return ait_err(AIT_E_IO, "onednn: %s: weight %u does not fit the model", r->in->path, i);
    if (s->sh->n_wc == s->sh->cap_wc) {
      int cap = s->sh->cap_wc ? 2 * s->sh->cap_wc : 32;
      dn_wentry *w = realloc(s->sh->wc, (size_t)cap * sizeof *w);
      if (!w) return ait_err(AIT_E_NOMEM, "out of memory");
      s->sh->wc = w, s->sh->cap_wc = cap;
    }
    void *data = NULL;
    if (posix_memalign(&data, 64, bytes ? (size_t)bytes : 64))
      return ait_err(AIT_E_NOMEM, "onednn: out of memory for weights");
    ait_state_get(r, data, (size_t)bytes);
    s->sh->wc[s->sh->n_wc++] = (dn_wentry){(int)slot, md, data, (size_t)bytes};
  }
  return ait_state_end(r);
}

/* The head section: the same oneDNN, descriptor size, precision and graph. */
static ait_status check_head(const dn_state *s, ait_state_rd *r, uint32_t *entries) {
  uint32_t hdr[7];
  const char *path = r->in->path;
  if (!ait_state_get(r, hdr, sizeof hdr)) return ait_state_corrupt(r, "cut short");
  AIT_TRY(ait_state_end(r));
  const dnnl_version_t *v = dnnl_version();
  if (hdr[0] != sizeof(dnnl_memory_desc_t) || hdr[1] != (uint32_t)v->major ||
      hdr[2] != (uint32_t)v->minor || hdr[3] != (uint32_t)v->patch)
    return ait_err(AIT_E_IO, "onednn: %s was written by oneDNN %u.%u.%u, this is %d.%d.%d", path,
                   hdr[1], hdr[2], hdr[3], v->major, v->minor, v->patch);
  if (hdr[4] != (uint32_t)s->bf16)
    return ait_err(AIT_E_IO, "onednn: %s holds %s weights, the configuration asks for %s", path,
                   hdr[4] ? "bf16" : "fp32", s->bf16 ? "bf16" : "fp32");
  if (hdr[5] != (uint32_t)s->n_slots)
    return ait_err(AIT_E_IO, "onednn: %s was saved for another graph (%u constants, now %d)", path,
                   hdr[5], s->n_slots);
  *entries = hdr[6];
  return AIT_OK;
}

ait_status dn_load_weights(dn_state *s, const char *dir) {
  char *path = ait_path_join(dir, DN_FILE);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_state_in in;
  ait_state_rd r;
  uint32_t entries = 0;
  ait_status st = ait_state_open(&in, path, DN_OWNER, DN_VERSION);
  free(path);
  if (st) return st;
  st = ait_state_section(&in, "head", &r);
  if (!st) st = check_head(s, &r, &entries);
  if (!st) st = ait_state_section(&in, "weights", &r);
  if (!st) st = load_entries(s, &r, entries);
  return ait_state_close(&in, st);
}
