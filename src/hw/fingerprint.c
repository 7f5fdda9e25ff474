#include "hw/fingerprint.h"

#include <cblas.h>
#include <openssl/evp.h>
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aitune.h"

void ait_sha256_hex(const void *data, size_t len, char *hex65) {
  unsigned char md[32];
  unsigned int n = 0;
  EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++)
    snprintf(hex65 + 2 * i, 3, "%02x", md[i]);
}

int ait_sha256_file(const char *path, char *hex65) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
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
  if (bad) return -1;
  for (int i = 0; i < 32; i++)
    snprintf(hex65 + 2 * i, 3, "%02x", md[i]);
  return 0;
}

/* The /proc/cpuinfo line "key : value" for the first CPU. */
static void cpuinfo_field(const char *key, char *out, size_t n) {
  out[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[8192];
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, kl) || (line[kl] != ' ' && line[kl] != '\t' && line[kl] != ':'))
      continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    colon++;
    while (*colon == ' ')
      colon++;
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, n, "%s", colon);
    break;
  }
  fclose(f);
}

/* The ISA features kernels dispatch on, in a fixed order. */
static void kernel_features(char *out, size_t n) {
  static const char *const feats[] = {
      "sse4_2",      "avx",         "avx2",     "fma",      "avx512f",  "avx512bw", "avx512vl",
      "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8", NULL};
  char flags[8192];
  cpuinfo_field("flags", flags, sizeof flags);
  out[0] = '\0';
  size_t at = 0;
  for (int i = 0; feats[i]; i++) {
    char pat[64];
    snprintf(pat, sizeof pat, " %s ", feats[i]);
    char padded[8200];
    snprintf(padded, sizeof padded, " %s ", flags);
    if (strstr(padded, pat) && at < n)
      at += (size_t)snprintf(out + at, n - at, "%s%s", at ? "," : "", feats[i]);
  }
}

const char *ait_fingerprint_text(char *buf, size_t n) {
  char model[256], feats[512];
  cpuinfo_field("model name", model, sizeof model);
  kernel_features(feats, sizeof feats);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(buf, n, "cpu=%s;features=%s;cores=%ld;aitune=%s;protobuf-c=%s;openblas=%s", model, feats,
           cores, AIT_VERSION_STRING, protobuf_c_version(), openblas_get_config());
  return buf;
}

const char *ait_fingerprint_digest(char *hex65) {
  char text[2048];
  ait_fingerprint_text(text, sizeof text);
  ait_sha256_hex(text, strlen(text), hex65);
  return hex65;
}

const char *ait_fingerprint_diff(const char *a, const char *b, char *buf, size_t n) {
  buf[0] = '\0';
  size_t at = 0;
  const char *pa = a, *pb = b;
  while (*pa || *pb) {
    size_t la = strcspn(pa, ";"), lb = strcspn(pb, ";");
    if (la != lb || strncmp(pa, pb, la))
      at += (size_t)snprintf(buf + at, at < n ? n - at : 0, "%s%.*s -> %.*s", at ? "; " : "",
                             (int)la, pa, (int)lb, pb);
    pa += la + (pa[la] == ';');
    pb += lb + (pb[lb] == ';');
    if (at >= n) break;
  }
  if (!buf[0]) snprintf(buf, n, "no difference");
  return buf;
}
