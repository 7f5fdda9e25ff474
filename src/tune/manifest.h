/* MANIFEST.sha256 of a tuned artifact (see manifest.c): written last when an
 * artifact is saved, checked first when one is loaded. */
#ifndef AIT_TUNE_MANIFEST_H
#define AIT_TUNE_MANIFEST_H

#include "aitune.h"

#define AIT_MANIFEST_NAME "MANIFEST.sha256"
/* Empty files a save puts in its folders while it works (artifact.c's
 * clean_stale tells a killed save's leftovers from a user's folders by
 * them); never listed in the manifest. */
#define AIT_MARK_PARTIAL ".aitune-partial"
#define AIT_MARK_PARKED ".aitune-parked"

/* Hash every file under dir but model.onnx and the manifest itself, and
 * write dir/MANIFEST.sha256 (sorted, `sha256sum` format) atomically. */
ait_status ait_manifest_write(const char *dir);
/* Check dir against its manifest: every listed file exists and matches, and
 * decision.json is listed. The error names the first file that does not. */
ait_status ait_manifest_check(const char *dir);

#endif
