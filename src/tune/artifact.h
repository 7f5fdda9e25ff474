/* Tuned folders by path, without a module: what the CLI checks before a
 * tune and reads for `report` (the module's own save and load are in
 * module_impl.h). Implemented in artifact.c. */
#ifndef AIT_TUNE_ARTIFACT_H
#define AIT_TUNE_ARTIFACT_H

#include <stdbool.h>

#include "aitune.h"

/* May a save replace dir? AIT_OK when it is absent or a tuned folder (or,
 * with force, anything), never when it is or holds model_path. */
ait_status ait_artifact_check_target(const char *dir, const char *model_path, bool force);
/* dir/report.json after checking dir's manifest: new string, caller frees. */
ait_status ait_artifact_read_report(const char *dir, char **json);
/* Tests: raise SIGKILL at the Nth step (rename or removal) of the next
 * saves' swap into place (0 = off); with fallback, swap as on a file system
 * without RENAME_EXCHANGE. */
void ait_artifact_test_kill_at(int step, bool fallback);
/* Remove a folder tree; quiet about missing paths. */
void ait_rmtree(const char *path);

#endif
