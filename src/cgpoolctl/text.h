/* text.h - how cgpoolctl's commands show numbers */
#ifndef CGPOOLCTL_TEXT_H
#define CGPOOLCTL_TEXT_H

#include <stddef.h>

#include <jansson.h>

/* bytes in binary units: "512B", "1.5K", "12.3M"; v >= 0 */
void text_size(long long v, char *buf, size_t len);
/* the same for a JSON integer; "-" for anything else (null: not known) */
void text_size_json(json_t *v, char *buf, size_t len);

#endif
