#include "hw/fingerprint.h"

#include <cblas.h>
#include <errno.h>
#include <oneapi/dnnl/dnnl.h>
#include <openssl/evp.h>
#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aitune.h"
#include "backends/openvino/ov_info.h"
#include "core/error.h"
#include "core/fileio.h"
#include "hw/hw_impl.h"

void ait_sha256_hex(const void *data, size_t len, char *hex65) {
  unsigned char md[32];
  unsigned int n = 0;
  EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++)
    snprintf(hex65 + 2 * i, 3, "%02x", md[i]);
}

int ait_sha256_file(const char *path, char *hex65) {
  /* every file hashed is a user's (a model, a tuned folder's files): a
   * regular file only, never a FIFO that would block the read */
  int fd;
  long long size;
  if (ait_open_regular(path, &fd, &size) != AIT_OK) return -1;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    ait_err(AIT_E_IO, "cannot read '%s': %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
    ait_err(AIT_E_NOMEM, "out of memory hashing '%s'", path);
    fclose(f);
    EVP_MD_CTX_free(ctx);
    return -1;
  }
  unsigned char buf[1 << 16];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0)
    EVP_DigestUpdate(ctx, buf, got);
  int bad = ferror(f);
  fclose(f);
  unsigned char md[32];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx, md, &n);
  EVP_MD_CTX_free(ctx);
  if (bad) {
    ait_err(AIT_E_IO, "cannot read '%s'", path);
    return -1;
  }
  for (int i = 0; i < 32; i++)
    snprintf(hex65 + 2 * i, 3, "%02x", md[i]);
  return 0;
}

/* The process's fingerprint, computed once (pthread_once): static after. */
static char fp_text[2048], fp_digest[65];
static pthread_once_t fp_once = PTHREAD_ONCE_INIT;

/* Feature flag names of the table in cpu.c, comma-separated, in bit order. */
static void kernel_features(char *out, size_t n) {
  char flags[8192];
  ait_hw_cpuinfo_field("flags", flags, sizeof flags);
  uint32_t bits = ait_hw_cpu_features_from_flags(flags);
  out[0] = '\0';
  size_t at = 0;
  for (int i = 0; i < AIT_CPU_FEATURE_COUNT && at < n; i++)
    if (bits >> i & 1)
      at +=
          (size_t)snprintf(out + at, n - at, "%s%s", at ? "," : "", ait_cpu_feature_name(1u << i));
}

/* Keys in this order: cpu, features, cores, gpus, cuda, nvidia_driver, then
 * library versions (openvino's loads libopenvino_c: a tuned folder's
 * exported OpenVINO blob is only imported by the build that wrote it).
 * Values never hold ';'. */
static void fingerprint_init(void) {
  char model[256], feats[512], gpu[1024], ov[128];
  ait_hw_cpuinfo_field("model name", model, sizeof model);
  kernel_features(feats, sizeof feats);
  ait_hw_gpu_fingerprint(gpu, sizeof gpu);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const dnnl_version_t *dv = dnnl_version();
  snprintf(fp_text, sizeof fp_text,
           "cpu=%s;features=%s;cores=%ld;%s;aitune=%s;protobuf-c=%s;openblas=%s;onednn=%d.%d.%d;"
           "openvino=%s",
           model[0] ? model : "unknown", feats, cores, gpu, AIT_VERSION_STRING,
           protobuf_c_version(), openblas_get_config(), dv ? dv->major : 0, dv ? dv->minor : 0,
           dv ? dv->patch : 0, ov_info_version(ov, sizeof ov));
  ait_sha256_hex(fp_text, strlen(fp_text), fp_digest);
}

const char *ait_hw_fingerprint(void) {
  pthread_once(&fp_once, fingerprint_init);
  return fp_text;
}

const char *ait_hw_fingerprint_digest(void) {
  pthread_once(&fp_once, fingerprint_init);
  return fp_digest;
}

const char *ait_fingerprint_text(char *buf, size_t n) {
  snprintf(buf, n, "%s", ait_hw_fingerprint());
  return buf;
}

const char *ait_fingerprint_digest(char *hex65) {
  memcpy(hex65, ait_hw_fingerprint_digest(), 65);
  return hex65;
}

/* The segment of `text` ("k=v;k=v") whose key is the key of `seg`, or NULL. */
static const char *find_key(const char *text, const char *seg, size_t seg_len, size_t *len) {
  size_t kl = strcspn(seg, "=;");
  if (kl > seg_len) kl = seg_len;
  for (const char *p = text; *p;) {
    size_t l = strcspn(p, ";");
    if (strcspn(p, "=;") == kl && !strncmp(p, seg, kl)) {
      *len = l;
      return p;
    }
    p += l + (p[l] == ';');
  }
  return NULL;
}

/* Append "A -> B" to buf at *at. */
static void add_change(char *buf, size_t n, size_t *at, const char *a, size_t la, const char *b,
                       size_t lb) {
  if (*at >= n) return;
  *at += (size_t)snprintf(buf + *at, n - *at, "%s%.*s -> %.*s", *at ? "; " : "", (int)la, a,
                          (int)lb, b);
}

const char *ait_fingerprint_diff(const char *a, const char *b, char *buf, size_t n) {
  buf[0] = '\0';
  size_t at = 0, lo;
  static const char absent[] = "(absent)";
  for (const char *p = a; *p;) { /* keys of a: changed or gone */
    size_t l = strcspn(p, ";");
    const char *o = find_key(b, p, l, &lo);
    if (!o)
      add_change(buf, n, &at, p, l, absent, sizeof absent - 1);
    else if (lo != l || strncmp(p, o, l))
      add_change(buf, n, &at, p, l, o, lo);
    p += l + (p[l] == ';');
  }
  for (const char *p = b; *p;) { /* keys only in b */
    size_t l = strcspn(p, ";");
    if (!find_key(a, p, l, &lo)) add_change(buf, n, &at, absent, sizeof absent - 1, p, l);
    p += l + (p[l] == ';');
  }
  if (!buf[0]) snprintf(buf, n, "no difference");
  return buf;
}
