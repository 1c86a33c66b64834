"""TCP Vegas (Brakmo and Peterson, SIGCOMM 1994) as an alcc controller in Python.

Once per round trip Vegas compares the rate the window would give without queueing
(window / base RTT) with the rate it got (window / RTT): their difference times the base RTT is
the number of its own packets sitting in the bottleneck queue. It keeps that between ``alpha`` and
``beta`` packets, one packet of change per round trip; slow start doubles every other round
until the queue passes ``gamma`` packets. A loss halves the window (as Reno).
"""

import math

import alcc


@alcc.register("vegas")
class Vegas(alcc.Controller):
    def __init__(self, alpha=2.0, beta=4.0, gamma=1.0, **config):
        super().__init__(**config)
        self.alpha, self.beta, self.gamma = alpha, beta, gamma
        self.window = 10 * self.mss
        self.base_rtt = math.inf  # the smallest RTT seen: the path without our queue
        self.round_rtt = math.inf  # the smallest RTT of the current round
        self.round_end = 0  # the first sequence number of the next round
        self.highest_sent = 0
        self.slow_start = True
        self.grow = True  # slow start grows every other round, measuring in between

    def on_sent(self, now, packet):
        self.highest_sent = packet.seq

    def on_ack(self, now, ack):
        self.base_rtt = min(self.base_rtt, ack.rtt)
        self.round_rtt = min(self.round_rtt, ack.rtt)
        if ack.seq < self.round_end:
            return
        self.round_end = self.highest_sent + 1
        queued = self.window / self.mss * (1 - self.base_rtt / self.round_rtt)  # packets
        self.round_rtt = math.inf
        if self.slow_start:
            if queued > self.gamma:
                self.slow_start = False
                self.window = max(self.window * 7 // 8, 2 * self.mss)
            elif self.grow:
                self.window *= 2
            self.grow = not self.grow
        elif queued < self.alpha:
            self.window += self.mss
        elif queued > self.beta:
            self.window = max(self.window - self.mss, 2 * self.mss)

    def on_loss(self, now, loss):
        if loss.seq >= self.round_end - 1:  # once per round
            self.window = max(self.window // 2, 2 * self.mss)
            self.slow_start = False
            self.round_end = self.highest_sent + 1

    def decision(self):
        return alcc.Decision(window=self.window)
