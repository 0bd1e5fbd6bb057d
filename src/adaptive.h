/*
 * adaptive.h
 *		The adaptive paths: moving averages of what recent calls did, from which
 *		claim, upsert and transition pick the order of their steps, and the
 *		developer setting idempotent_inbox.force_path that overrides them.
 *
 * Every order gives the same answers; the averages only pick the cheaper one.
 * Because an order is taken only after some calls have warmed an average up,
 * force_path lets the tests run every order from a call's first:
 *
 *	force_path	claim			upsert			transition
 *	auto		from dup_rate	from fresh_rate	from fresh_rate
 *				(insert first	and update_rate	(read first
 *				when cold)		(read first		when cold)
 *								when cold)
 *	probe		probe first		read first		read first
 *	insert		insert first	insert first	UPDATE first
 *	update		insert first	UPDATE first	UPDATE first
 *
 * probe makes every call look before it writes; insert and update make every
 * call write first, naming which write upsert tries.  A forced order still
 * yields to the rules that make an order unsafe (snapshot isolation for claim's
 * probe, triggers for upsert's writes, read rights for transition's read).
 */
#ifndef ADAPTIVE_H
#define ADAPTIVE_H

/*
 * Recent share of calls with some property, in 1/1024ths, each call weighing
 * 1/16: what the adaptive paths decide from.
 */
#define SHARE_SCALE 1024
#define SHARE_THRESHOLD_HALF (SHARE_SCALE / 2)

static inline void
share_record(int *share, bool hit)
{
	*share += ((hit ? SHARE_SCALE : 0) - *share) >> 4;
}

/* The values of idempotent_inbox.force_path. */
typedef enum AdaptiveForce
{
	ADAPTIVE_AUTO,				/* from the averages */
	ADAPTIVE_PROBE,				/* read first */
	ADAPTIVE_INSERT,			/* write first, upsert's INSERT */
	ADAPTIVE_UPDATE				/* write first, upsert's UPDATE */
} AdaptiveForce;

/* The step whose going first a caller asks about. */
typedef enum AdaptiveStep
{
	STEP_READ,					/* claim's probe */
	STEP_INSERT,				/* upsert's INSERT ... ON CONFLICT DO NOTHING */
	STEP_UPDATE,				/* upsert's guarded UPDATE */
	STEP_WRITE					/* a call's only write (transition's UPDATE) */
} AdaptiveStep;

extern int	adaptive_force_path;

extern void adaptive_init(void);

/* Whether step goes first: as the averages say (by_averages), unless forced. */
static inline bool
adaptive_goes_first(bool by_averages, AdaptiveStep step)
{
	switch ((AdaptiveForce) adaptive_force_path)
	{
		case ADAPTIVE_PROBE:
			return step == STEP_READ;
		case ADAPTIVE_INSERT:
			return step == STEP_INSERT || step == STEP_WRITE;
		case ADAPTIVE_UPDATE:
			return step == STEP_UPDATE || step == STEP_WRITE;
		case ADAPTIVE_AUTO:
			break;
	}
	return by_averages;
}

#endif							/* ADAPTIVE_H */
