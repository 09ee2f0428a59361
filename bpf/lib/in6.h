/* Comparisons of IPv6 addresses (struct strait_in6), word by word without branches. */
#pragma once

#include <stdbool.h>

#include "common.h"

static __always_inline bool strait_in6_same(const struct strait_in6 *a, const struct strait_in6 *b)
{
	return ((a->addr[0] ^ b->addr[0]) | (a->addr[1] ^ b->addr[1]) | (a->addr[2] ^ b->addr[2]) | (a->addr[3] ^ b->addr[3])) == 0;
}

static __always_inline bool strait_in6_zero(const struct strait_in6 *a)
{
	return (a->addr[0] | a->addr[1] | a->addr[2] | a->addr[3]) == 0;
}
