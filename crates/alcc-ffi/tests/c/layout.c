/* Prints the size and the field offsets of struct alcc_info as the C compiler lays it out
 * from include/alcc.h, one "name offset size" line per field, for the Rust test that
 * compares them with the Rust definition (crates/alcc-ffi/tests/c_program.rs). */
#include "alcc.h"

#include <stddef.h>
#include <stdio.h>

#define FIELD(f) printf("%s %zu %zu\n", #f, offsetof(struct alcc_info, f), sizeof(((struct alcc_info *)0)->f))

int main(void) {
    printf("struct %zu %zu\n", sizeof(struct alcc_info), _Alignof(struct alcc_info));
    FIELD(window);
    FIELD(pacing_rate);
    FIELD(bytes_in_flight);
    FIELD(max_bytes_in_flight);
    FIELD(queued);
    FIELD(bytes_written);
    FIELD(bytes_acked);
    FIELD(losses);
    FIELD(srtt_us);
    FIELD(min_rtt_us);
    FIELD(kernel_cwnd);
    FIELD(kernel_delivery_rate);
    FIELD(kernel_rtt_us);
    FIELD(kernel_min_rtt_us);
    FIELD(kernel_notsent);
    FIELD(kernel_total_retrans);
    FIELD(controller);
    FIELD(underlay);
    FIELD(prior_congestion);
    return 0;
}
