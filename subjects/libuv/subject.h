/*
 * subject.h: what the two files of libuv-subject share: subject.c runs the
 * script on libuv's streams, subject_script.c checks what of the script
 * it can run and arms its faults. Internal to the subject.
 */
#ifndef WIRECHECK_LIBUV_SUBJECT_H
#define WIRECHECK_LIBUV_SUBJECT_H

#include "script_read.h"

/* Sends one command line to the preloaded gate on fd 5 (faultinject/preload.c,
 * "arm SPEC", "disarm"). Returns 0, or -1 when it could not be written. */
int uvs_gate_command(const char *text);

/* Ends the subject (sp_fatal) when the script holds an op or a layer libuv
 * has no equivalent for: cork, HTTP, WebSocket. */
void uvs_refuse_unsupported(const struct sr_script *sc);

/* Ends the subject when every fault of the script is on a call libuv never
 * makes (send, sendto, sendmsg, recv): the scenario would run fault-free. */
void uvs_refuse_unreached_faults(const struct sr_script *sc);

/* Arms each of the script's faults in the preloaded gate, or ends the
 * subject when the gate does not take one. */
void uvs_arm_faults(const struct sr_script *sc);

#endif
