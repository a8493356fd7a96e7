/* text.h - how cgpoolctl's commands show what the daemon answers */
#ifndef CGPOOLCTL_TEXT_H
#define CGPOOLCTL_TEXT_H

#include <stddef.h>

#include <jansson.h>

/* bytes in binary units: "512B", "1.5K", "12.3M"; v >= 0 */
void text_size(long long v, char *buf, size_t len);
/* the same for a JSON integer; "-" for anything else (null: not known) */
void text_size_json(json_t *v, char *buf, size_t len);
/* microseconds since the epoch as local time; "-" for anything else */
void text_time(json_t *v, char *buf, size_t len);
/* "key: value" lines; nested objects indented; absent and null fields
 * skipped; sizes and times of the fields that hold them in human units */
void text_print_object(json_t *obj, int indent);
/* one JSON value, indented on a terminal, compact otherwise */
void text_print_json(json_t *v);
const char *text_str_field(json_t *obj, const char *name, const char *dflt);

#endif
