// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fleet's connection options: their defaults, rules and help lines. */
#include <stdio.h>
#include "fleet_agent.h"
#include "fleet_opts.h"
#include "fleet_stream.h"
#include "optparse.h"

void fleet_opts_default(struct fleet_opts *o)
{
	*o = (struct fleet_opts){ .shards = FLEET_DEFAULT_SHARDS };
}

int fleet_opts_option(struct fleet_opts *o, int opt, const char *arg, char *err,
		      size_t errlen)
{
	unsigned long n;

	switch (opt) {
	case FLEET_OPT_REDIS:
		o->redis_url = arg;
		break;
	case FLEET_OPT_SHARDS:
		if (opt_uint(arg, 1, FS_MAX_SHARDS, &n)) {
			snprintf(err, errlen, "bad --shards (1..%d): '%s'", FS_MAX_SHARDS, arg);
			return -1;
		}
		o->shards = (unsigned)n;
		break;
	case FLEET_OPT_METRICS:
		o->metrics_addr = arg;
		break;
	case FLEET_OPT_REDIS_AUTH_FILE:
	case FLEET_OPT_HMAC_KEY_FILE:
		/* an empty FILE (a shell variable not set): bad usage, said
		 * before anything connects */
		if (!*arg) {
			snprintf(err, errlen, "empty --redis-auth-file or --hmac-key-file");
			return -1;
		}
		*(opt == FLEET_OPT_REDIS_AUTH_FILE ? &o->redis_auth_file :
		  &o->hmac_key_file) = arg;
		break;
	default:
		return 1;
	}
	o->given = true;
	return 0;
}

void fleet_opts_usage(FILE *f)
{
	struct fleet_opts d;

	fleet_opts_default(&d);
	fprintf(f,
		"      --shards N        record streams, the same for every agent and\n"
		"                        analyzer (default %u)\n"
		"      --metrics [ADDR:]PORT  Prometheus /metrics on this address\n"
		"      --redis-auth-file FILE  Redis password, or ACL user and password, in\n"
		"                        FILE (one line: PASSWORD or USER PASSWORD; default\n"
		"                        $CCLD_REDIS_AUTH_FILE)\n"
		"      --hmac-key-file FILE  HMAC-SHA256 keyed by FILE's bytes: agents tag\n"
		"                        every record with it, analyzers accept only records\n"
		"                        so tagged (others are counted and dropped; default\n"
		"                        $CCLD_HMAC_KEY_FILE)\n",
		d.shards);
}
