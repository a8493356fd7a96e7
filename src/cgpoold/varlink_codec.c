/* varlink_codec.c - the Varlink wire format: a request decoded and
 * checked, a reply encoded (NUL-terminated JSON). */
#include "config.h"

#include "varlink_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ decoding */

/* interface part: reverse-domain words; member: a word. Bytes [A-Za-z0-9_-.]. */
bool vl_method_name_ok(const char *m)
{
	const char *dot = strrchr(m, '.');

	if (!dot || dot == m || dot[1] == '\0' || m[0] == '.')
		return false;
	for (const char *p = m; *p; p++)
		if ((!isalnum((unsigned char)*p) && !strchr("._-", *p)) || (p[0] == '.' && p[1] == '.'))
			return false;
	return true;
}

/* the string if v is one without an embedded NUL, else NULL */
const char *vl_c_string(json_t *v)
{
	const char *s = json_string_value(v);

	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

static int decode_flag(json_t *root, const char *name, bool *out)
{
	json_t *v = json_object_get(root, name);

	if (v && !json_is_null(v) && !json_is_boolean(v))
		return -EINVAL;
	*out = json_is_true(v);
	return 0;
}

static const char *decode_fields(json_t *root, struct vl_request *req)
{
	json_t *m = json_object_get(root, "method");
	json_t *p = json_object_get(root, "parameters");

	if (!json_is_string(m))
		return "method is missing or not a string";
	if (json_string_length(m) >= sizeof(req->method))
		return "method name is too long";
	if (!vl_c_string(m) || !vl_method_name_ok(vl_c_string(m)))
		return "method name is not a valid Varlink method name";
	if (p && !json_is_null(p) && !json_is_object(p))
		return "parameters is not an object";
	if (decode_flag(root, "oneway", &req->oneway) < 0)
		return "oneway is not a boolean";
	if (decode_flag(root, "more", &req->more) < 0)
		return "more is not a boolean";
	if (decode_flag(root, "upgrade", &req->upgrade) < 0)
		return "upgrade is not a boolean";
	strcpy(req->method, json_string_value(m));
	req->params = json_is_object(p) ? json_incref(p) : json_object();
	return req->params ? NULL : "out of memory";
}

int vl_request_decode(const char *msg, size_t len, struct vl_request *out, const char **why)
{
	struct vl_request req = { .params = NULL };
	json_error_t jerr;
	const char *err;
	json_t *root;

	/* \u0000 is valid JSON: a string holding it is the method's to refuse */
	root = json_loadb(msg, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!root) {
		*why = "message is not valid JSON";
		return -EINVAL;
	}
	err = json_is_object(root) ? decode_fields(root, &req) : "message is not a JSON object";
	json_decref(root);
	if (err) {
		*why = err;
		return -EINVAL;
	}
	*out = req;
	return 0;
}

char *vl_encode(const char *error, json_t *params, bool continues, size_t *len)
{
	json_t *root;
	char *s;

	if (!params)
		params = json_object();
	if (!json_is_object(params)) {
		json_decref(params);
		return NULL;
	}
	/* json_pack steals "o" even when it fails */
	root = error ? json_pack("{s:s, s:o}", "error", error, "parameters", params)
		     : json_pack("{s:o}", "parameters", params);
	if (root && continues && json_object_set_new(root, "continues", json_true()) < 0) {
		json_decref(root);
		root = NULL;
	}
	if (!root)
		return NULL;
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (s)
		*len = strlen(s) + 1;
	return s;
}

char *vl_reply_encode(const char *error, json_t *params, size_t *len)
{
	return vl_encode(error, params, false, len);
}
