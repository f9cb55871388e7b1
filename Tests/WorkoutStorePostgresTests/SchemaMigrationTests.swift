import Foundation
import Testing
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// The PostgreSQL schema's migrations on a database of the test's own.
@Suite("PostgreSQL schema migrations", .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct SchemaMigrationTests {
    @Test("chunk partitions keep room for rewritten tails: new ones are created so, existing ones get it by migration 3")
    func chunkPartitionsHaveAFillFactorForInPlaceRewrites() throws {
        let database = try TestPostgres.ownDatabase("migrate")
        defer { TestPostgres.drop(database) }
        let url = database.url
        let athlete = UUID()
        let suffix = athlete.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        func options(_ table: String) throws -> String {
            try TestPostgres.psql(url, "SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE relname = '\(table)_\(suffix)'")
        }
        do {
            let database = try PostgresWorkoutDatabase(url: url, poolSize: 2)
            _ = try database.store(athlete: athlete)
            database.closeConnections()
        }
        #expect(try options("sample_chunk") == "fillfactor=70")
        #expect(try options("route_chunk") == "fillfactor=70")
        #expect(try options("journal_change") == "", "tables only appended to keep full pages")

        // The database as version 2 left it (partitions without a fill factor, no journal function): migrations
        // 3 and 4 run again.
        for statement in [
            "ALTER TABLE sample_chunk_\(suffix) RESET (fillfactor)", "ALTER TABLE route_chunk_\(suffix) RESET (fillfactor)",
            "DROP FUNCTION workout_journal_append", "DELETE FROM schema_migration WHERE version >= 3",
        ] { try TestPostgres.psql(url, statement) }
        #expect(try options("sample_chunk") == "")
        let reopened = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        defer { reopened.closeConnections() }
        #expect(try options("sample_chunk") == "fillfactor=70")
        #expect(try options("route_chunk") == "fillfactor=70")
        #expect(try TestPostgres.psql(url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migration") == "1,2,3,4,5")
        // And the store writes through the function migration 4 made.
        let store = try reopened.store(athlete: athlete)
        let recording = try store.beginRecording(configuration: WorkoutConfiguration(activityType: .running), commitInterval: 0)
        try recording.session.start()
        try recording.builder.add([QuantitySample(.heartRate, 120, at: Date(), source: SourceDevice(name: "strap"))])
        try recording.commit()
        #expect(try recording.committedSamples().count == 1)
        try recording.discard()
    }
}
