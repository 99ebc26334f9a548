/* status.c: imij_strerror, the one text of every status code in imij_kernels.h (enum
 * imij_status). imij_plugins/payload/kernel_codes.py builds its errors' messages from it. */
#include "imij_kernels.h"

const char *imij_strerror(int status)
{
    switch (status) {
    case IMIJ_OK: return "success";
    case IMIJ_E_ARGS: return "kernel refused its arguments (geometry, slots, model structs, store, plane or counts)";
    case IMIJ_E_SIZE: return "a buffer is smaller than the kernel writes";
    case IMIJ_E_SPACE: return "the output does not fit its buffer";
    case IMIJ_E_FREQ: return "a symbol or outcome its table gives no probability";
    case IMIJ_E_MANY: return "more than 256 distinct tuples";
    case IMIJ_E_RANGE: return "a value of 2^depth or more";
    case IMIJ_E_LAYOUT: return "level kernel called on a layout other than 0x81-0x84";
    case IMIJ_E_TRUNCATED: return "runs past the end of its bytes";
    case IMIJ_E_VARINT: return "stream length is not a minimal varint";
    case IMIJ_E_FEATURE: return "bilevel or template stripe layout without its feature";
    case IMIJ_E_DECOR: return "decorrelation mode not allowed here";
    case IMIJ_E_PREDICTOR: return "row predictor out of range (or row 0 not W)";
    case IMIJ_E_LENGTHS: return "stream lengths do not fill the record";
    case IMIJ_E_PALETTE: return "palette stripe without head present bit 0";
    case IMIJ_E_ENTRY: return "palette entry not below 2^n";
    case IMIJ_E_DEPTH: return "palette entries of a slot deeper than 16 bits";
    case IMIJ_E_RECORD: return "bilevel or template stripe layout without its head record (25 / 35)";
    case IMIJ_E_SLOT: return "bilevel stripe (0x81) where the payload's only slot is not 1 bit deep";
    case IMIJ_E_COUNT: return "bilevel palette stripe (0x82) with more than two entries";
    case IMIJ_E_SHARED: return "layout 0x84 while head record 35 has no shared entries";
    case IMIJ_E_ROWS: return "typical-row bit set past the last row";
    case IMIJ_E_RUN: return "run passes the unit's pixel count";
    case IMIJ_E_TRAILING: return "bytes after the last pixel";
    case IMIJ_E_UNEQUAL: return "colour components differ in a 1/2-channel unit";
    case IMIJ_E_STATE: return "initial rANS state below 2^16";
    case IMIJ_E_WORDS: return "stream needs more words than it holds (or an odd byte count)";
    case IMIJ_E_VALUE: return "value token past 32 bits";
    case IMIJ_E_LAST: return "table's last symbol at or past the alphabet";
    case IMIJ_E_GAMMA: return "gamma code with more than 24 leading zero bits";
    case IMIJ_E_EXPONENT: return "weight exponent outside 0..=32";
    case IMIJ_E_CAP: return "weight on a run token past the run cap of 2^15";
    case IMIJ_E_EMPTY: return "table has no nonzero weight";
    case IMIJ_E_SCHEME: return "k and m that the slot's depth does not allow";
    case IMIJ_E_CROSS: return "cross context in a slot that may not use it";
    default: return "unknown status";
    }
}
