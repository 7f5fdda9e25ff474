/* The saved state: weights already reordered into the layouts the
 * primitives chose, so a loaded model does not reorder them again. Folded
 * constants are not saved: folding is cheap and deterministic, and load
 * lowers the graph again (the slot count is checked to match).
 *
 * onednn.bin, little-endian:
 *   "AITDNNL\0", u32 version, u32 sizeof(dnnl_memory_desc_t),
 *   u32 oneDNN major, minor, patch, u32 bf16, u32 slots, u32 entries,
 *   entries x { u32 slot, u64 bytes, memory descriptor, data },
 *   u64 FNV-1a (over 8-byte words) of everything before it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"
#include "core/fileio.h"

#define DN_FILE "onednn.bin"
#define DN_MAGIC "AITDNNL"
#define DN_VERSION 1u

/* FNV-1a over 8-byte words (then the tail bytes): fast enough for
 * hundreds of megabytes of weights. */
static uint64_t fnv64(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static uint8_t *put(uint8_t *at, const void *v, size_t n) {
  memcpy(at, v, n);
  return at + n;
}

static uint8_t *put32(uint8_t *at, uint32_t v) { return put(at, &v, 4); }

static ait_status save_locked(const dn_state *s, const char *dir);

/* The weight cache is shared with the state's clones: read under its lock. */
ait_status dn_save(const dn_state *s, const char *dir) {
  pthread_mutex_lock(s->sh->lock);
  ait_status st = save_locked(s, dir);
  pthread_mutex_unlock(s->sh->lock);
  return st;
}

static ait_status save_locked(const dn_state *s, const char *dir) {
  size_t md = sizeof(dnnl_memory_desc_t), size = 8 + 4 * 8 + 8;
  for (int i = 0; i < s->sh->n_wc; i++)
    size += 4 + 8 + md + s->sh->wc[i].size;
  uint8_t *buf = malloc(size), *at = buf;
  if (!buf) return ait_err(AIT_E_NOMEM, "onednn: out of memory saving %zu bytes", size);
  const dnnl_version_t *v = dnnl_version();
  at = put(at, DN_MAGIC, 8);
  at = put32(at, DN_VERSION);
  at = put32(at, (uint32_t)md);
  at = put32(at, (uint32_t)v->major);
  at = put32(at, (uint32_t)v->minor);
  at = put32(at, (uint32_t)v->patch);
  at = put32(at, s->bf16);
  at = put32(at, (uint32_t)s->n_slots);
  at = put32(at, (uint32_t)s->sh->n_wc);
  for (int i = 0; i < s->sh->n_wc; i++) {
    uint64_t bytes = s->sh->wc[i].size;
    at = put32(at, (uint32_t)s->sh->wc[i].slot);
    at = put(at, &bytes, 8);
    at = put(at, &s->sh->wc[i].md, md);
    at = put(at, s->sh->wc[i].data, s->sh->wc[i].size);
  }
  uint64_t h = fnv64(buf, (size_t)(at - buf));
  at = put(at, &h, 8);
  char *path = ait_path_join(dir, DN_FILE);
  ait_status st =
      path ? ait_write_file_atomic(path, buf, size) : ait_err(AIT_E_NOMEM, "out of memory");
  free(path);
  free(buf);
  return st;
}

typedef struct reader {
  const uint8_t *p;
  size_t left;
} reader;

static bool get(reader *r, void *out, size_t n) {
  if (r->left < n) return false;
  memcpy(out, r->p, n);
  r->p += n, r->left -= n;
  return true;
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

static ait_status load_entries(dn_state *s, reader *r, uint32_t n, const char *path) {
  size_t mdsz = sizeof(dnnl_memory_desc_t);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t slot;
    uint64_t bytes;
    dnnl_memory_desc_t md;
    if (!get(r, &slot, 4) || !get(r, &bytes, 8) || !get(r, &md, mdsz) || bytes > r->left)
      return ait_err(AIT_E_IO, "onednn: %s is truncated (weight %u)", path, i);
    if (slot >= (uint32_t)s->n_slots || !md_sane(&md, s->slots[slot].t, bytes))
      return ait_err(AIT_E_IO, "onednn: %s: weight %u does not fit the model", path, i);
    if (s->sh->n_wc == s->sh->cap_wc) {
      int cap = s->sh->cap_wc ? 2 * s->sh->cap_wc : 32;
      dn_wentry *w = realloc(s->sh->wc, (size_t)cap * sizeof *w);
      if (!w) return ait_err(AIT_E_NOMEM, "out of memory");
      s->sh->wc = w, s->sh->cap_wc = cap;
    }
    void *data = NULL;
    if (posix_memalign(&data, 64, bytes ? (size_t)bytes : 64))
      return ait_err(AIT_E_NOMEM, "onednn: out of memory for weights");
    get(r, data, (size_t)bytes);
    s->sh->wc[s->sh->n_wc++] = (dn_wentry){(int)slot, md, data, (size_t)bytes};
  }
  return AIT_OK;
}

ait_status dn_load_weights(dn_state *s, const char *dir) {
  char *path = ait_path_join(dir, DN_FILE);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  void *data = NULL;
  size_t size = 0;
  ait_status st = ait_read_file(path, &data, &size);
  if (st) {
    st = ait_err_prefix(st, "onednn: cannot load the saved state");
    free(path);
    return st;
  }
  reader r = {data, size};
  char magic[8];
  uint32_t hdr[8];
  uint64_t h;
  if (size < 8 + sizeof hdr + 8 || !get(&r, magic, 8) || memcmp(magic, DN_MAGIC, 8))
    st = ait_err(AIT_E_IO, "onednn: %s is not an onednn state file", path);
  else if (memcpy(&h, (const uint8_t *)data + size - 8, 8), h != fnv64(data, size - 8))
    st = ait_err(AIT_E_IO, "onednn: %s is corrupted (checksum mismatch)", path);
  r.left = size - 16;
  if (!st && !get(&r, hdr, sizeof hdr)) st = ait_err(AIT_E_IO, "onednn: %s is truncated", path);
  const dnnl_version_t *v = dnnl_version();
  if (!st && hdr[0] != DN_VERSION)
    st = ait_err(AIT_E_IO, "onednn: %s has format version %u, expected %u", path, hdr[0],
                 DN_VERSION);
  if (!st && (hdr[1] != sizeof(dnnl_memory_desc_t) || hdr[2] != (uint32_t)v->major ||
              hdr[3] != (uint32_t)v->minor || hdr[4] != (uint32_t)v->patch))
    st = ait_err(AIT_E_IO, "onednn: %s was written by oneDNN %u.%u.%u, this is %d.%d.%d", path,
                 hdr[2], hdr[3], hdr[4], v->major, v->minor, v->patch);
  if (!st && hdr[5] != (uint32_t)s->bf16)
    st = ait_err(AIT_E_IO, "onednn: %s holds %s weights, the configuration asks for %s", path,
                 hdr[5] ? "bf16" : "fp32", s->bf16 ? "bf16" : "fp32");
  if (!st && hdr[6] != (uint32_t)s->n_slots)
    st = ait_err(AIT_E_IO, "onednn: %s was saved for another graph (%u constants, now %d)", path,
                 hdr[6], s->n_slots);
  if (!st) st = load_entries(s, &r, hdr[7], path);
  if (!st && r.left) st = ait_err(AIT_E_IO, "onednn: %s has trailing bytes", path);
  free(data);
  free(path);
  return st;
}
