package org.alcc.cc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.alcc.cc.mdi.Buckets;
import org.alcc.cc.mdi.Mdi;
import org.alcc.cc.mdi.MdiModel;
import org.alcc.cc.mdi.SplitMix64;
import org.junit.jupiter.api.Test;

/** The same exact checks as the Rust crate's mdi tests, on the same crafted models. */
class MdiTest {
    static final String TINY = "2,-10,0,10,2,-10,0,10\n0.0,1.0,0.25,0.75\n0,0,1,0\n0.5,0.5,0,0\n0,0,0,0\n";
    static final String CERTAIN = "2,-10,0,10,2,-10,0,10\n0,1,1,0\n0,1,1,0\n0,1,0,0\n0,1,1,0\n";

    static MdiModel model(String text) throws IOException {
        return MdiModel.read(new ByteArrayInputStream(text.getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void splitmix64ReferenceOutputs() {
        SplitMix64 r = new SplitMix64(1477776061723855037L);
        assertEquals(1985237415132408290L, r.nextLong());
        assertEquals(2979275885539914483L, r.nextLong());
        SplitMix64 u = new SplitMix64(0);
        long x = new SplitMix64(0).nextLong();
        assertEquals((double) (x >>> 11) / 9007199254740992.0, u.nextDouble());
    }

    @Test
    void bucketsClampAtBothEnds() {
        Buckets b = Buckets.of(25, -60, 60, 5);
        assertEquals(0, b.bucketOf(-1000));
        assertEquals(11, b.bucketOf(-0.1));
        assertEquals(12, b.bucketOf(0));
        assertEquals(24, b.bucketOf(1e300));
        assertEquals(24, b.bucketOf(Double.POSITIVE_INFINITY));
        assertEquals(0, b.bucketOf(Double.NEGATIVE_INFINITY));
        assertEquals(12, b.bucketOf(Double.NaN));
        assertEquals(2.5, b.centre(12));
        assertEquals(20.0, Buckets.relativeChange(100, 110), 1e-12);
        assertThrows(IllegalArgumentException.class, () -> Buckets.of(3, -5, 6, 5));
    }

    @Test
    void samplesByCumulativeProbabilityAndUsesTheNearestSeenState() throws IOException {
        MdiModel m = model(TINY);
        assertEquals(0, m.sample(0, 1, 0.2499));
        assertEquals(1, m.sample(0, 1, 0.25));
        assertEquals(1, m.sample(1, 0, 0.9)); // row 1 borrows row 0's block
        assertTrue(!m.seen(1, 0));
    }

    @Test
    void malformedModelsNameTheLine() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> model("2,-10,0,10,2,-10,0,10\n0,1,1,0\n0,1,1,abc\n"));
        assertTrue(e.getMessage().contains("line 3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> model("2,-10,0,10,2,-10,0\n"));
        assertTrue(e.getMessage().contains("line 1"), e.getMessage());
    }

    @Test
    void oneDecisionPerEpochFromTheDelayTrend() throws IOException {
        Mdi c = new Mdi(model(CERTAIN), 1, 1000);
        ack(c, 0, 100_000);
        ack(c, 1, 100_000);
        c.onTimer(5_000);
        assertEquals(10_000, c.decision().window);
        ack(c, 6, 110_000);
        c.onTimer(10_000);
        assertEquals(9_500, c.decision().window);
        ack(c, 11, 99_000);
        c.onTimer(15_000);
        double expected = 9.5 * (1.0 + 5.0 / (100.0 * StrictMath.log10(9.5)));
        assertEquals(expected, c.windowPackets());
    }

    @Test
    void specsBuildAndRefuseBadParameters() throws IOException {
        assertEquals("mdi", Controllers.build("mdi", 1448, 1).name());
        assertEquals(14480, Controllers.build("mdi:seed=5", 1448, 1).decision().window);
        assertEquals("copa", Controllers.build("copa:delta=0.1,mode=default", 1448, 1).name());
        for (String mode : new String[] {"nocheck", "drain", "auto", "default"}) {
            assertEquals("copa", Controllers.build("copa:mode=" + mode, 1448, 1).name());
        }
        assertThrows(IllegalArgumentException.class, () -> Controllers.build("copa:mode=fast", 1448, 1));
        assertThrows(IllegalArgumentException.class, () -> Controllers.build("copa:detla=1", 1448, 1));
        assertThrows(IllegalArgumentException.class, () -> Controllers.build("copa:delta=50", 1448, 1));
        assertThrows(IllegalArgumentException.class, () -> Controllers.build("verus", 1448, 1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Controllers.build("mdi:model=/nonexistent/m.csv", 1448, 1));
        assertTrue(e.getMessage().contains("/nonexistent/m.csv"), e.getMessage());
    }

    private static void ack(Mdi c, long ms, long rttUs) {
        c.onAck(ms * 1000, new AckSample(0, 1000, 0, rttUs * 1000, 0, 1000, 0));
    }
}
