import Foundation
import Testing
import WorkoutStorePostgres

/// Installs a trigger on `athlete`'s journal partition that fails the insert of change `seq`: at once, or
/// (`deferred`) when its transaction commits, after the statement itself has completed. Returns the statement
/// removing it.
func failJournalInsert(athlete: UUID, seq: Int64, deferred: Bool) throws -> String {
    let url = try #require(TestPostgres.url)
    let partition = PostgresSchema.partition("journal_change", athlete: athlete)
    let function = "workout_test_fail_seq_" + athlete.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    try TestPostgres.psql(
        url,
        """
        CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS
          $$BEGIN IF NEW.seq = \(seq) THEN RAISE EXCEPTION 'change % refused', NEW.seq; END IF;
          RETURN NULL; END$$
        """)
    try TestPostgres.psql(
        url,
        "CREATE CONSTRAINT TRIGGER fail_seq AFTER INSERT ON \(partition) "
            + (deferred ? "DEFERRABLE INITIALLY DEFERRED " : "") + "FOR EACH ROW EXECUTE FUNCTION \(function)()")
    return "DROP TRIGGER fail_seq ON \(partition); DROP FUNCTION \(function)()"
}
