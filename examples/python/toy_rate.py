"""A toy rate-based controller: it paces at a rate and moves it by what the RTT says.

Every 100 ms it looks at the smallest RTT of the interval: near the path's minimum (below
1.1 x min RTT) it raises the rate by 10 %; above 1.5 x min RTT it cuts it to 80 % of what was
delivered in the interval. The window is two bandwidth-delay products, so pacing, not the
window, sets the pace. A teaching example, not an algorithm to deploy.
"""

import math

import alcc

INTERVAL = 0.1  # seconds between rate updates


@alcc.register("toy-rate")
class ToyRate(alcc.Controller):
    def __init__(self, start_rate=125_000.0, **config):
        super().__init__(**config)
        self.rate = start_rate  # bytes per second
        self.min_rtt = math.inf
        self.interval_rtt = math.inf
        self.delivered = 0  # bytes acknowledged in this interval
        self.due = None

    def on_ack(self, now, ack):
        self.min_rtt = min(self.min_rtt, ack.rtt)
        self.interval_rtt = min(self.interval_rtt, ack.rtt)
        self.delivered += ack.bytes
        if self.due is None:
            self.due = now + INTERVAL

    def on_timer(self, now):
        if self.interval_rtt < 1.1 * self.min_rtt:
            self.rate *= 1.1
        elif self.interval_rtt > 1.5 * self.min_rtt:
            self.rate = max(0.8 * self.delivered / INTERVAL, 10 * self.mss)
        self.interval_rtt, self.delivered = math.inf, 0
        self.due = now + INTERVAL

    def next_timer(self):
        return self.due

    def decision(self):
        rtt = self.min_rtt if math.isfinite(self.min_rtt) else 0.1
        return alcc.Decision(window=max(2 * self.rate * rtt, 4 * self.mss), pacing_rate=self.rate)
