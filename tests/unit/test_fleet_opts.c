// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/fleet/fleet_opts.c, the fleet options `ccld-trace daemon` and
 * ccld-analyzer share: the defaults, each rule with its message, the ids
 * left to the caller, `given` (ccld-trace refuses these options outside
 * daemon), and the defaults in the usage text.
 */
#include <getopt.h>
#include <stdlib.h>
#include "an_config.h"
#include "check.h"
#include "fleet_agent.h"
#include "fleet_opts.h"

static int opt(struct fleet_opts *o, int id, const char *arg, char *err)
{
	err[0] = 0;
	return fleet_opts_option(o, id, arg, err, 128);
}

static void test_defaults(void)
{
	struct fleet_opts o;

	memset(&o, 0xa5, sizeof(o));
	fleet_opts_default(&o);
	CHECK_INT(o.shards, FLEET_DEFAULT_SHARDS);
	CHECK(!o.redis_url && !o.metrics_addr && !o.redis_auth_file && !o.hmac_key_file);
	CHECK(!o.given);
}

static void test_rules(void)
{
	struct fleet_opts o;
	char err[128];

	fleet_opts_default(&o);
	CHECK_INT(opt(&o, 'p', "1", err), 1);
	CHECK_INT(opt(&o, AN_OPT_STALL, "1", err), 1);
	CHECK(!o.given);
	CHECK_INT(opt(&o, FLEET_OPT_SHARDS, "0", err), -1);
	CHECK_STR(err, "bad --shards (1..4096): '0'");
	CHECK_INT(opt(&o, FLEET_OPT_SHARDS, "4097", err), -1);
	CHECK_INT(opt(&o, FLEET_OPT_SHARDS, "+3", err), -1);
	CHECK_INT(opt(&o, FLEET_OPT_SHARDS, "", err), -1);
	CHECK_INT(o.shards, FLEET_DEFAULT_SHARDS);
	CHECK(!o.given);
	CHECK_INT(opt(&o, FLEET_OPT_SHARDS, "4096", err), 0);
	CHECK_INT(o.shards, 4096);
	CHECK(o.given);
	CHECK_INT(opt(&o, FLEET_OPT_REDIS_AUTH_FILE, "", err), -1);
	CHECK_STR(err, "empty --redis-auth-file or --hmac-key-file");
	CHECK_INT(opt(&o, FLEET_OPT_HMAC_KEY_FILE, "", err), -1);
	CHECK_INT(opt(&o, FLEET_OPT_REDIS_AUTH_FILE, "/a", err), 0);
	CHECK_INT(opt(&o, FLEET_OPT_HMAC_KEY_FILE, "/k", err), 0);
	CHECK_STR(o.redis_auth_file, "/a");
	CHECK_STR(o.hmac_key_file, "/k");
	CHECK_INT(opt(&o, FLEET_OPT_REDIS, "redis://r", err), 0);
	CHECK_INT(opt(&o, FLEET_OPT_METRICS, "127.0.0.1:9", err), 0);
	CHECK_STR(o.redis_url, "redis://r");
	CHECK_STR(o.metrics_addr, "127.0.0.1:9");

	/* a value alone gives it */
	fleet_opts_default(&o);
	CHECK_INT(opt(&o, FLEET_OPT_SHARDS, "8", err), 0);
	CHECK(o.given);
}

/* the table entries, through getopt_long as both programs use them */
static void test_long_options(void)
{
	static const struct option lo[] = { FLEET_OPTS_LONG_OPTIONS, { 0 } };
	char *argv[] = { "x", "--redis", "unix:///r", "--shards=3", "--metrics", "9",
			 "--redis-auth-file", "/a", "--hmac-key-file", "/k", NULL };
	struct fleet_opts o;
	char err[128];
	int c, n = 0;

	fleet_opts_default(&o);
	optind = 1;
	while ((c = getopt_long(10, argv, "", lo, NULL)) != -1) {
		CHECK_INT(fleet_opts_option(&o, c, optarg, err, sizeof(err)), 0);
		n++;
	}
	CHECK_INT(n, 5);
	CHECK_STR(o.redis_url, "unix:///r");
	CHECK_INT(o.shards, 3);
	CHECK_STR(o.metrics_addr, "9");
	CHECK_STR(o.redis_auth_file, "/a");
	CHECK_STR(o.hmac_key_file, "/k");
}

static void test_usage(void)
{
	char *buf = NULL, dflt[32];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		CHECK(f != NULL);
		return;
	}
	fleet_opts_usage(f);
	fclose(f);
	snprintf(dflt, sizeof(dflt), "(default %u)", FLEET_DEFAULT_SHARDS);
	CHECK(strstr(buf, "--shards N") && strstr(buf, dflt));
	CHECK(strstr(buf, "--metrics [ADDR:]PORT") != NULL);
	CHECK(strstr(buf, "--redis-auth-file FILE") && strstr(buf, "$CCLD_REDIS_AUTH_FILE"));
	CHECK(strstr(buf, "--hmac-key-file FILE") && strstr(buf, "$CCLD_HMAC_KEY_FILE"));
	CHECK(!strstr(buf, "as the agents use") && !strstr(buf, "as the analyzers use"));
	free(buf);
}

int main(void)
{
	test_defaults();
	test_rules();
	test_long_options();
	test_usage();
	return check_finish("test_fleet_opts");
}
