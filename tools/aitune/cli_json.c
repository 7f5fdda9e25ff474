/* JSON output of the commands (--json): one object on stdout, built with
 * cJSON so that every string from a model or a path is escaped. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cli_print_json(struct cJSON *j) {
  char *text = j ? cJSON_Print(j) : NULL;
  cJSON_Delete(j);
  if (!text) {
    fprintf(stderr, "aitune: out of memory printing JSON\n");
    return 1;
  }
  puts(text);
  free(text);
  return 0;
}
