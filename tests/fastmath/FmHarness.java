import java.io.*;
import java.lang.reflect.Field;
import org.apache.commons.math3.util.FastMath;

/**
 * The reference for tests/fastmath_jar.rs: Commons Math's FastMath (the jar SystemDS ships)
 * applied to argument files, and its lookup tables read by reflection.
 * {@code tables OUT} writes the tables; {@code run DIR f1 f2 ...} maps DIR/f.in to DIR/f.out.
 */
public class FmHarness {
    public static void main(String[] a) throws Exception {
        if (a[0].equals("tables")) {
            try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(a[1])))) {
                String[][] names = {{"", "SINE_TABLE_A"}, {"", "SINE_TABLE_B"}, {"", "COSINE_TABLE_A"}, {"", "COSINE_TABLE_B"},
                    {"", "TANGENT_TABLE_A"}, {"", "TANGENT_TABLE_B"}, {"$ExpIntTable", "EXP_INT_TABLE_A"},
                    {"$ExpIntTable", "EXP_INT_TABLE_B"}, {"$ExpFracTable", "EXP_FRAC_TABLE_A"}, {"$ExpFracTable", "EXP_FRAC_TABLE_B"}};
                for (String[] n : names) {
                    Field f = Class.forName("org.apache.commons.math3.util.FastMath" + n[0]).getDeclaredField(n[1]);
                    f.setAccessible(true);
                    double[] v = (double[]) f.get(null);
                    out.writeInt(v.length);
                    for (double d : v) out.writeLong(Double.doubleToRawLongBits(d));
                }
            }
            return;
        }
        for (int k = 2; k < a.length; k++) {
            run(a[k], new File(a[1], a[k] + ".in"), new File(a[1], a[k] + ".out"));
        }
    }

    /** Applies function {@code fn} to the count-prefixed big-endian doubles of {@code inFile}. */
    static void run(String fn, File inFile, File outFile) throws IOException {
        DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(inFile)));
        int n = in.readInt();
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(outFile)))) {
            for (int i = 0; i < n; i++) {
                double x = Double.longBitsToDouble(in.readLong()), y;
                switch (fn) {
                    case "exp": y = FastMath.exp(x); break;
                    case "sin": y = FastMath.sin(x); break;
                    case "cos": y = FastMath.cos(x); break;
                    case "tan": y = FastMath.tan(x); break;
                    case "asin": y = FastMath.asin(x); break;
                    case "acos": y = FastMath.acos(x); break;
                    case "sinh": y = FastMath.sinh(x); break;
                    case "cosh": y = FastMath.cosh(x); break;
                    case "tanh": y = FastMath.tanh(x); break;
                    default: throw new IllegalArgumentException(fn);
                }
                out.writeLong(Double.doubleToRawLongBits(y));
            }
        }
    }
}
