package org.alcc.cc.copa;

/** Copa's velocity (port of {@code copa::velocity::Velocity}; NSDI 2018 section 2.2). */
final class Velocity {
    private double v = 1.0;
    private int direction; // -1 down, 0 still, 1 up
    private double cwndAtLastUpdate;

    Velocity(double cwnd) {
        this.cwndAtLastUpdate = cwnd;
    }

    double value() {
        return v;
    }

    /** Once per RTT: doubles while the window keeps its direction, else back to 1. */
    void onRound(double cwnd, double delta) {
        int dir = cwnd > cwndAtLastUpdate ? 1 : cwnd < cwndAtLastUpdate ? -1 : 0;
        if (dir != 0 && dir == direction) {
            v *= 2.0;
        } else {
            v = 1.0;
        }
        if (v > cwnd * delta) {
            v /= 2.0;
        }
        v = Math.max(v, 1.0);
        direction = dir;
        cwndAtLastUpdate = cwnd;
    }
}
