package org.alcc.cc;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import org.alcc.cc.copa.Copa;
import org.alcc.cc.copa.FlightGate;
import org.alcc.cc.copa.ModePolicy;
import org.alcc.cc.mdi.Mdi;
import org.alcc.cc.mdi.MdiModel;

/**
 * Controllers by specification, as the Rust registry: {@code copa} (the authors' mode switch,
 * {@code mode=nocheck}), {@code copa:mode=drain} (our drain check; {@code mode=auto} is its
 * earlier name), {@code copa:delta=0.1,mode=default},
 * {@code mdi}, {@code mdi:model=FILE,seed=N}. A misspelt or out-of-range parameter is an error.
 */
public final class Controllers {
    /** The algorithms the Java library implements. */
    public static final String[] NAMES = {"copa", "mdi"};

    private Controllers() {}

    /** Builds the controller {@code spec} with packets of {@code mss} bytes and flow seed {@code seed}. */
    public static Controller build(String spec, long mss, long seed) throws IOException {
        String s = spec.trim();
        int colon = s.indexOf(':');
        String name = (colon < 0 ? s : s.substring(0, colon)).toLowerCase(java.util.Locale.ROOT);
        Map<String, String> params = new LinkedHashMap<>();
        if (colon >= 0) {
            for (String pair : s.substring(colon + 1).split(",", -1)) {
                int eq = pair.indexOf('=');
                if (eq <= 0 || eq == pair.length() - 1 || params.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim()) != null) {
                    throw new IllegalArgumentException("malformed controller spec `" + spec + "`: expected name[:key=value,...]");
                }
            }
        }
        Controller c;
        switch (name) {
            case "copa": {
                double delta = number(name, params, "delta", Copa.DEFAULT_DELTA, 0.001, 10.0);
                String mode = params.containsKey("mode") ? params.remove("mode") : "nocheck";
                ModePolicy policy;
                switch (mode) {
                    case "nocheck":
                        policy = ModePolicy.NO_CHECK;
                        break;
                    case "drain":
                    case "auto":
                        policy = ModePolicy.DRAIN;
                        break;
                    case "default":
                        policy = ModePolicy.DEFAULT;
                        break;
                    default:
                        throw bad(name, "mode", mode, "must be one of nocheck, drain, auto, default");
                }
                String gate = params.containsKey("gate") ? params.remove("gate") : "reference";
                if (!gate.equals("reference") && !gate.equals("cwnd")) {
                    throw bad(name, "gate", gate, "must be one of reference, cwnd");
                }
                c = new Copa(mss, delta, policy, gate.equals("cwnd") ? FlightGate.CWND : FlightGate.REFERENCE);
                break;
            }
            case "mdi": {
                long flowSeed = seed;
                if (params.containsKey("seed")) {
                    String raw = params.remove("seed");
                    flowSeed = unsigned64(name, "seed", raw);
                }
                MdiModel model;
                if (params.containsKey("model")) {
                    String path = params.remove("model");
                    try (InputStream in = new FileInputStream(path)) {
                        model = MdiModel.read(in);
                    } catch (IllegalArgumentException e) {
                        throw bad(name, "model", path, path + ": " + e.getMessage());
                    } catch (IOException e) {
                        throw bad(name, "model", path, path + ": cannot read: " + e.getMessage());
                    }
                } else {
                    model = Mdi.builtinModel();
                }
                c = new Mdi(model, flowSeed, mss);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown congestion controller `" + name + "` (the Java library has: copa, mdi)");
        }
        if (!params.isEmpty()) {
            throw new IllegalArgumentException("`" + name + "` takes no parameter `" + params.keySet().iterator().next() + "`");
        }
        return c;
    }

    private static double number(String name, Map<String, String> params, String key, double dflt, double min, double max) {
        String raw = params.remove(key);
        if (raw == null) {
            return dflt;
        }
        double v;
        try {
            v = Double.parseDouble(raw);
        } catch (NumberFormatException e) {
            throw bad(name, key, raw, "not a number");
        }
        if (Double.isNaN(v) || Double.isInfinite(v) || v < min || v > max) {
            throw bad(name, key, raw, "must be between " + min + " and " + max);
        }
        return v;
    }

    /** A whole number in [0, 2^64), as Rust's u64 (Long.parseUnsignedLong is not in Android API 21). */
    private static long unsigned64(String name, String key, String raw) {
        java.math.BigInteger v;
        try {
            v = new java.math.BigInteger(raw);
        } catch (NumberFormatException e) {
            throw bad(name, key, raw, "not a whole number");
        }
        if (v.signum() < 0 || v.bitLength() > 64) {
            throw bad(name, key, raw, "must be between 0 and 18446744073709551615");
        }
        return v.longValue();
    }

    private static IllegalArgumentException bad(String name, String key, String value, String why) {
        return new IllegalArgumentException("`" + name + "`: bad value `" + value + "` for `" + key + "`: " + why);
    }
}
