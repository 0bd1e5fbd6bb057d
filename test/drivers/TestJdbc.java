/*
 * claim_apply called through PostgreSQL's JDBC driver (Debian's
 * libpostgresql-jdbc-java) the way a Java application calls it: a
 * PreparedStatement with ? placeholders and the plain setters, no casts.
 *
 * By default the driver sends setString as varchar, a declared type, and
 * setInt / setBigDecimal / setObject(OffsetDateTime) as int4 / numeric /
 * timestamptz, so every value reaches claim_apply typed.  With
 * stringtype=unspecified (common with ORMs), setString and setTimestamp are
 * sent untyped beside typed numbers: the extension's parse-analysis hook, loaded
 * in every session by session_preload_libraries, gives them the types the
 * statement gives its $n.
 *
 * Prints TAP for prove, one line per assertion.  Connects over TCP (JDBC has no
 * Unix sockets) to the URL in INBOX_JDBC_URL as INBOX_JDBC_USER with the password
 * in INBOX_JDBC_PASSWORD, set by the harness.  Arguments are ignored (prove passes
 * this file's name).
 */
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;

public class TestJdbc
{
	private static final String APPLY5 = "SELECT inbox.claim_apply(?, ?, ?, ?, ?)";
	private static final String CREDIT = "UPDATE java_accounts SET balance = balance + $2 WHERE id = $1";
	private static final String SEEN = "UPDATE java_accounts SET seen_at = $2 WHERE id = $1";

	private static int count = 0;
	private static int failed = 0;

	private static void ok(boolean passed, String name, String diag)
	{
		count++;
		if (!passed)
			failed++;
		System.out.println((passed ? "ok " : "not ok ") + count + " - " + name);
		if (!passed && diag != null)
			for (String line : diag.split("\n"))
				System.err.println("# " + line);
		System.out.flush();
	}

	private static void eq(Object got, Object want, String name)
	{
		ok(Objects.equals(got, want), name, "got:  " + got + "\nwant: " + want);
	}

	private interface Setter
	{
		void set(PreparedStatement ps) throws SQLException;
	}

	private static Connection connect(boolean unspecified) throws SQLException
	{
		Properties props = new Properties();

		props.setProperty("user", System.getenv("INBOX_JDBC_USER"));
		props.setProperty("password", System.getenv("INBOX_JDBC_PASSWORD"));
		if (unspecified)
			props.setProperty("stringtype", "unspecified");
		return DriverManager.getConnection(System.getenv("INBOX_JDBC_URL"), props);
	}

	/* One claim_apply call: the five ? are inbox, message id, statement, then the setter's two. */
	private static String apply(Connection conn, String id, String stmt, Setter values) throws SQLException
	{
		try (PreparedStatement ps = conn.prepareStatement(APPLY5))
		{
			ps.setString(1, "java_inbox");
			ps.setString(2, id);
			ps.setString(3, stmt);
			values.set(ps);
			try (ResultSet rs = ps.executeQuery())
			{
				rs.next();
				return rs.getString(1);
			}
		}
	}

	private static Object column(Connection conn, String sql) throws SQLException
	{
		try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql))
		{
			rs.next();
			return rs.getObject(1);
		}
	}

	private static String balance(Connection conn, String account) throws SQLException
	{
		return column(conn, "SELECT balance::text FROM java_accounts WHERE id = '" + account + "'").toString();
	}

	private interface Scenario
	{
		void run() throws Exception;
	}

	/* A scenario that throws is one failed assertion, not the end of the run. */
	private static void scenario(String name, Scenario s)
	{
		try
		{
			s.run();
		}
		catch (Exception e)
		{
			ok(false, name + " died", e.toString());
		}
	}

	public static void main(String[] args) throws Exception
	{
		try (Connection conn = connect(false); Statement st = conn.createStatement())
		{
			st.execute("SELECT inbox.create_inbox('java_inbox')");
			st.execute("CREATE TABLE java_accounts (id text PRIMARY KEY, balance numeric(12,2) NOT NULL DEFAULT 0, seen_at timestamptz)");
			st.execute("INSERT INTO java_accounts (id) VALUES ('alice'), ('bob'), ('carol'), ('dave'), ('erin')");
		}

		OffsetDateTime when = OffsetDateTime.of(2024, 2, 29, 12, 30, 15, 0, ZoneOffset.UTC);

		scenario("default stringtype", () -> {
			try (Connection conn = connect(false))
			{
				Setter five = ps -> { ps.setString(4, "alice"); ps.setInt(5, 5); };
				eq(apply(conn, "d-1", CREDIT, five), "applied", "setString beside setInt: applied");
				eq(apply(conn, "d-1", CREDIT, five), "duplicate", "setString beside setInt: redelivery is a duplicate");
				eq(apply(conn, "d-2", CREDIT, ps -> { ps.setString(4, "alice"); ps.setBigDecimal(5, new BigDecimal("0.25")); }),
				   "applied", "setString beside setBigDecimal: applied");
				eq(balance(conn, "alice"), "5.25", "default stringtype: each effect applied once, values exact");
				eq(apply(conn, "d-3", SEEN, ps -> { ps.setString(4, "bob"); ps.setObject(5, when); }),
				   "applied", "setString beside setObject(OffsetDateTime): applied");
				eq(column(conn, "SELECT seen_at = '2024-02-29 12:30:15+00' FROM java_accounts WHERE id = 'bob'"),
				   true, "setObject(OffsetDateTime): the same instant is stored");
				eq(apply(conn, "d-4", CREDIT, ps -> { ps.setString(4, "bob"); ps.setString(5, "1.50"); }),
				   "applied", "setString only: applied");
				eq(balance(conn, "bob"), "1.50", "setString only: the string converted to the type of $2");
			}
		});

		scenario("stringtype=unspecified", () -> {
			try (Connection conn = connect(true))
			{
				Setter seven = ps -> { ps.setString(4, "carol"); ps.setInt(5, 7); };
				eq(apply(conn, "u-1", CREDIT, seven), "applied", "stringtype=unspecified, setString beside setInt: applied");
				eq(apply(conn, "u-1", CREDIT, seven), "duplicate", "stringtype=unspecified: redelivery is a duplicate");
				eq(apply(conn, "u-2", CREDIT, ps -> { ps.setString(4, "carol"); ps.setBigDecimal(5, new BigDecimal("0.10")); }),
				   "applied", "stringtype=unspecified, setString beside setBigDecimal: applied");
				eq(balance(conn, "carol"), "7.10", "stringtype=unspecified: each effect applied once, values exact");
				eq(apply(conn, "u-3", SEEN, ps -> { ps.setString(4, "dave"); ps.setTimestamp(5, Timestamp.from(when.toInstant())); }),
				   "applied", "stringtype=unspecified, setString beside setTimestamp (both untyped): applied");
				eq(column(conn, "SELECT seen_at = '2024-02-29 12:30:15+00' FROM java_accounts WHERE id = 'dave'"),
				   true, "setTimestamp: the same instant is stored");
			}
		});

		/*
		 * From the fifth execution of one PreparedStatement on, the driver switches
		 * to a named server-side statement: both paths must type the values.
		 */
		for (boolean unspecified : new boolean[] {false, true})
		{
			String mode = unspecified ? "stringtype=unspecified" : "default stringtype";

			scenario("server-prepared, " + mode, () -> {
				try (Connection conn = connect(unspecified); PreparedStatement ps = conn.prepareStatement(APPLY5))
				{
					List<String> outcomes = new ArrayList<>();

					for (int round = 0; round < 2; round++)
						for (int i = 0; i < 8; i++)
						{
							ps.setString(1, "java_inbox");
							ps.setString(2, (unspecified ? "pu-" : "pd-") + i);
							ps.setString(3, CREDIT);
							ps.setString(4, "erin");
							ps.setInt(5, 1);
							try (ResultSet rs = ps.executeQuery())
							{
								rs.next();
								outcomes.add(rs.getString(1));
							}
						}
					long applied = outcomes.stream().filter("applied"::equals).count();
					eq(outcomes.subList(0, 8).stream().allMatch("applied"::equals) &&
					   outcomes.subList(8, 16).stream().allMatch("duplicate"::equals),
					   true, mode + ": 8 calls past prepareThreshold applied, their redeliveries duplicates (" + applied + " applied)");
				}
			});
		}
		scenario("server-prepared balance", () -> {
			try (Connection conn = connect(false))
			{
				eq(balance(conn, "erin"), "16.00", "server-prepared calls: each effect applied once");
			}
		});

		scenario("errors", () -> {
			try (Connection conn = connect(true))
			{
				String state = null;

				try
				{
					apply(conn, "e-1", CREDIT, ps -> { ps.setString(4, "carol"); ps.setString(5, "lots"); });
				}
				catch (SQLException e)
				{
					state = e.getSQLState();
				}
				eq(state, "22P02", "a string that is not a number for a numeric $n: 22P02");
			}
		});

		System.out.println("1.." + count);
		System.exit(failed == 0 ? 0 : 1);
	}
}
