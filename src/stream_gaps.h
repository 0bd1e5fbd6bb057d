/*
 * stream_gaps.h
 *		Offsets completed out of order (stream_gaps.c).
 */
#ifndef INBOX_STREAM_GAPS_H
#define INBOX_STREAM_GAPS_H

extern void stream_gaps_init(void);

#endif							/* INBOX_STREAM_GAPS_H */
