/* manager_features.h - the Probe reply's account of the kernel */
#ifndef CGPOOL_MANAGER_FEATURES_H
#define CGPOOL_MANAGER_FEATURES_H

#include <jansson.h>

#include "cg.h"

/* features: which kernel interfaces cgpool found here (true or false each);
 * fallbacks: for each one it cannot use here, what it does instead and why,
 * as a sentence (absent when the feature is used). */
void manager_features_json(const struct cg_info *info, json_t **features, json_t **fallbacks);

#endif
