/* Finding, loading and checking backend plugins (plugin.h), and the table
 * of library functions they call. */
#define _GNU_SOURCE /* dladdr */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ait_build_id.h"
#include "backends/plugin/plugin.h"

static ait_status host_err_msg(ait_status code, const char *msg) {
  return ait_err(code, "%s", msg);
}

static ait_status host_err_prefix_msg(ait_status code, const char *msg) {
  return ait_err_prefix(code, "%s", msg);
}

static const ait_plugin_host host = {
    .abi = AIT_PLUGIN_ABI,
    .size = sizeof(ait_plugin_host),
    .build_id = AIT_BUILD_ID,
    .err_msg = host_err_msg,
    .err_prefix_msg = host_err_prefix_msg,
#define AIT_HOST_FN(ret, name, params, args) .name = name,
#define AIT_HOST_VOID(name, params, args) .name = name,
#include "backends/plugin/host_fns.h"
#undef AIT_HOST_FN
#undef AIT_HOST_VOID
};

/* Append ", text" (or the first "text") to the reason in why. */
static void why_add(char *why, size_t n, const char *text) {
  size_t at = strlen(why);
  if (at + 1 < n) snprintf(why + at, n - at, "%s%s", at ? "; " : "", text);
}

/* Try one path. true with *iface set when it loaded and accepted the host;
 * otherwise what went wrong is added to why. A file that loaded stays
 * loaded even when it is refused: unloading what it brought in (the CUDA
 * libraries, their exit handlers) is not safe, and it happens once. */
static bool try_path(const char *path, const ait_backend_iface **iface, char *why, size_t n) {
  char line[1024];
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    if (!e) e = "cannot be loaded";
    if (!strncmp(e, path, strlen(path))) /* dlerror names the file itself... */
      snprintf(line, sizeof line, "%s", e);
    else /* ...but not when what is missing is a library it needs */
      snprintf(line, sizeof line, "%s: %s", path, e);
    why_add(why, n, line);
    return false;
  }
  ait_plugin_init_fn init = (ait_plugin_init_fn)(uintptr_t)dlsym(h, AIT_PLUGIN_INIT_SYMBOL);
  if (!init) {
    snprintf(line, sizeof line, "%s has no %s: not an aitune plugin", path, AIT_PLUGIN_INIT_SYMBOL);
    why_add(why, n, line);
    return false;
  }
  char refusal[512] = "";
  if (init(&host, iface, refusal, sizeof refusal) != AIT_OK || !*iface) {
    snprintf(line, sizeof line, "%s: %s", path, refusal[0] ? refusal : "refused to load");
    why_add(why, n, line);
    *iface = NULL;
    return false;
  }
  return true; /* never unloaded: the backend's code and data live on */
}

/* The folder of the file holding this code (libaitune.so, or a program
 * linked with libaitune.a), with a trailing '/'; "" when unknown. */
static void own_folder(char *dir, size_t n) {
  Dl_info info;
  dir[0] = '\0';
  char *path = NULL;
  if (dladdr((void *)(uintptr_t)ait_plugin_load, &info) && info.dli_fname &&
      strchr(info.dli_fname, '/'))
    path = realpath(info.dli_fname, NULL);
  if (!path) path = realpath("/proc/self/exe", NULL); /* a program's name may lack a '/' */
  char *slash = path ? strrchr(path, '/') : NULL;
  if (slash && (size_t)(slash - path) + 2 <= n) {
    slash[1] = '\0';
    snprintf(dir, n, "%s", path);
  }
  free(path);
}

const ait_backend_iface *ait_plugin_load(const char *name, char *why, size_t n) {
  char file[128], env[128];
  const ait_backend_iface *iface = NULL;
  why[0] = '\0';
  snprintf(file, sizeof file, "libaitune_%s.so", name);
  size_t k = (size_t)snprintf(env, sizeof env, "AITUNE_");
  for (const char *p = name; *p && k + 1 < sizeof env; p++)
    env[k++] = (char)toupper((unsigned char)*p);
  snprintf(env + k, sizeof env - k, "_PLUGIN");

  const char *forced = getenv(env);
  if (forced) {
    if (!*forced || !strcmp(forced, "off")) {
      snprintf(why, n, "the %s plugin is turned off ($%s=%s)", name, env, forced);
      return NULL;
    }
    if (try_path(forced, &iface, why, n)) return iface;
    size_t at = strlen(why);
    if (at + 1 < n) snprintf(why + at, n - at, " (the path in $%s)", env);
    return NULL;
  }

  char beside[4096];
  struct stat sb;
  own_folder(beside, sizeof beside);
  size_t dl = strlen(beside);
  snprintf(beside + dl, sizeof beside - dl, "%s", file);
  if (dl && stat(beside, &sb) == 0) {
    if (try_path(beside, &iface, why, n)) return iface;
    return NULL; /* it is there but does not load: that is the reason to give */
  }
  if (try_path(file, &iface, why, n)) return iface;
  if (dl) beside[dl] = '\0';
  char line[4200];
  snprintf(line, sizeof line, "looked in %s%sthe loader's search path; $%s may name it", beside,
           dl ? " and " : "", env);
  why_add(why, n, line);
  return NULL;
}
