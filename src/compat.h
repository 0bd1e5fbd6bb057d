/*
 * compat.h
 *		Every difference between the PostgreSQL versions we build against (13-17).
 *
 * Code elsewhere calls the names defined here and never tests PG_VERSION_NUM itself.
 */
#ifndef INBOX_COMPAT_H
#define INBOX_COMPAT_H

#include "postgres.h"

#include "parser/analyze.h"
#include "utils/guc.h"

/* PostgreSQL 15 added the query environment argument. */
#if PG_VERSION_NUM >= 150000
#define compat_parse_analyze_varparams(stmt, src, types, ntypes) \
	parse_analyze_varparams((stmt), (src), (types), (ntypes), NULL)
#else
#define compat_parse_analyze_varparams(stmt, src, types, ntypes) \
	parse_analyze_varparams((stmt), (src), (types), (ntypes))
#endif

/* PostgreSQL 15 renamed EmitWarningsOnPlaceholders and made it reserve the prefix. */
#if PG_VERSION_NUM >= 150000
#define compat_reserve_guc_prefix(prefix) MarkGUCPrefixReserved(prefix)
#else
#define compat_reserve_guc_prefix(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* PostgreSQL 16 folded the per-catalog ownership checks into object_ownercheck. */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_class.h"
#include "utils/acl.h"
#define compat_table_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#include "utils/acl.h"
#define compat_table_ownercheck(relid, roleid) pg_class_ownercheck((relid), (roleid))
#endif

#endif							/* INBOX_COMPAT_H */
