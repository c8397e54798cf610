// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/fleet/fleet_cred.c (auth and key files) and user/fleet/fleet_mac.c (record
 * tags): the accepted forms, each refusal with its line and no secret in
 * the message, loading from files and from the environment, and one tag
 * computed independently (Python's hmac over the documented layout).
 */
#include <stdlib.h>
#include <unistd.h>
#include "check.h"
#include "fleet_cred.h"
#include "fleet_mac.h"
#include "fleet_stream.h"

static int auth(const char *text, char *user, char *pass, char *err)
{
	return fleet_auth_parse(text, strlen(text), user, 32, pass, 32, err, 256);
}

static void test_auth_parse(void)
{
	char user[32], pass[32], err[256];

	CHECK_INT(auth("s3cret\n", user, pass, err), 0);
	CHECK_STR(user, "");
	CHECK_STR(pass, "s3cret");
	CHECK_INT(auth("# the agents' user\n\n  agent\tpw-1 \r\n", user, pass, err), 0);
	CHECK_STR(user, "agent");
	CHECK_STR(pass, "pw-1");
	CHECK_INT(auth("nonl", user, pass, err), 0);
	CHECK_STR(pass, "nonl");
	CHECK_INT(auth("", user, pass, err), -1);
	CHECK(strstr(err, "no password") != NULL);
	CHECK_INT(auth("# only\n\n", user, pass, err), -1);
	CHECK_INT(auth("a b secretword\n", user, pass, err), -1);
	CHECK(strstr(err, "line 1") && !strstr(err, "secretword"));
	CHECK_INT(auth("pw1\n#\npw2secret\n", user, pass, err), -1);
	CHECK(strstr(err, "line 3") && !strstr(err, "pw2secret"));
	CHECK_INT(auth("u 0123456789012345678901234567890123456789\n", user, pass, err), -1);
	CHECK(strstr(err, "password longer") && !strstr(err, "0123"));
	CHECK_INT(fleet_auth_parse("p\0w", 3, user, 32, pass, 32, err, 256), -1);
	CHECK(strstr(err, "NUL") != NULL);
}

static void test_key_parse(void)
{
	static const char big[65] = "0123456789012345678901234567890123456789"
				    "012345678901234567890123";
	uint8_t key[64];
	size_t len = 0;
	char err[256];

	CHECK_INT(fleet_key_parse("0123456789abcdef\n", 17, key, sizeof(key), &len, err,
				  sizeof(err)), 0);
	CHECK_INT(len, 16);
	CHECK_INT(fleet_key_parse("0123456789abcdef\r\n", 18, key, sizeof(key), &len,
				  err, sizeof(err)), 0);
	CHECK_INT(len, 16);
	CHECK_INT(fleet_key_parse("0123456789abcdef\n\n", 18, key, sizeof(key), &len,
				  err, sizeof(err)), 0);
	CHECK_INT(len, 17);	/* only one newline is taken off */
	CHECK_INT(fleet_key_parse("short\n", 6, key, sizeof(key), &len, err,
				  sizeof(err)), -1);
	CHECK(strstr(err, "5 bytes") && !strstr(err, "short"));
	CHECK_INT(fleet_key_parse(big, 65, key, sizeof(key), &len, err, sizeof(err)), -1);
	CHECK(strstr(err, "at most 64") != NULL);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_load(void)
{
	char dir[] = "/tmp/test_fleet_cred.XXXXXX", a[64], k[64], err[512];
	struct fs_cred c;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(a, sizeof(a), "%s/auth", dir);
	snprintf(k, sizeof(k), "%s/key", dir);
	put(a, "agent pw\n");
	put(k, "abcdefghijklmnopqrstuvwxyz\n");
	unsetenv(FC_ENV_AUTH);
	unsetenv(FC_ENV_KEY);
	CHECK_INT(fleet_cred_load(&c, NULL, NULL, err, sizeof(err)), 0);
	CHECK(!c.pass[0] && !c.keylen);
	CHECK_INT(fleet_cred_load(&c, a, k, err, sizeof(err)), 0);
	CHECK_STR(c.user, "agent");
	CHECK_STR(c.pass, "pw");
	CHECK_INT(c.keylen, 26);
	setenv(FC_ENV_AUTH, a, 1);
	setenv(FC_ENV_KEY, k, 1);
	CHECK_INT(fleet_cred_load(&c, NULL, NULL, err, sizeof(err)), 0);
	CHECK_STR(c.pass, "pw");
	CHECK_INT(c.keylen, 26);
	CHECK_INT(fleet_cred_load(&c, "/nonexistent/x", NULL, err, sizeof(err)), -1);
	CHECK_STR(err, "Redis auth file /nonexistent/x: cannot open: No such file or directory");
	CHECK_INT(fleet_cred_load(&c, NULL, dir, err, sizeof(err)), -1);
	CHECK(strstr(err, "HMAC key file") && strstr(err, "not a regular file"));
	CHECK(!c.pass[0] && !c.keylen);	/* wiped on failure */
	unsetenv(FC_ENV_AUTH);
	unsetenv(FC_ENV_KEY);
	unlink(a);
	unlink(k);
	rmdir(dir);
}

static void test_tag(void)
{
	struct hmac_sha256_key k;
	uint8_t data[10];
	char tag[FM_TAG_HEX + 1];
	int i;

	for (i = 0; i < 10; i++)
		data[i] = (uint8_t)i;
	hmac_sha256_key(&k, "0123456789abcdef", 16);
	fleet_mac_tag(&k, "ccld:rec:3", "node7", 5, 0x1122334455667788ull, 42, data, 10,
		      tag);
	CHECK_STR(tag, "cf96e404e5f37d7cc868d9c3e6aec77f");
	CHECK(fleet_mac_ok(&k, "ccld:rec:3", "node7", 5, 0x1122334455667788ull, 42,
			   data, 10, tag, FM_TAG_HEX));
	/* any field changed, or the tag cut, fails */
	CHECK(!fleet_mac_ok(&k, "ccld:rec:2", "node7", 5, 0x1122334455667788ull, 42,
			    data, 10, tag, FM_TAG_HEX));
	CHECK(!fleet_mac_ok(&k, "ccld:rec:3", "node8", 5, 0x1122334455667788ull, 42,
			    data, 10, tag, FM_TAG_HEX));
	CHECK(!fleet_mac_ok(&k, "ccld:rec:3", "node7", 5, 0x1122334455667789ull, 42,
			    data, 10, tag, FM_TAG_HEX));
	CHECK(!fleet_mac_ok(&k, "ccld:rec:3", "node7", 5, 0x1122334455667788ull, 43,
			    data, 10, tag, FM_TAG_HEX));
	CHECK(!fleet_mac_ok(&k, "ccld:rec:3", "node7", 5, 0x1122334455667788ull, 42,
			    data, 9, tag, FM_TAG_HEX));
	CHECK(!fleet_mac_ok(&k, "ccld:rec:3", "node7", 5, 0x1122334455667788ull, 42,
			    data, 10, tag, FM_TAG_HEX - 1));
	hmac_sha256_key(&k, "0123456789abcdeF", 16);
	CHECK(!fleet_mac_ok(&k, "ccld:rec:3", "node7", 5, 0x1122334455667788ull, 42,
			    data, 10, tag, FM_TAG_HEX));
}

int main(void)
{
	test_auth_parse();
	test_key_parse();
	test_load();
	test_tag();
	return check_finish("test_fleet_cred");
}
