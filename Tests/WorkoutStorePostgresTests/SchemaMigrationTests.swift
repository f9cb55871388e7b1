import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

@testable import WorkoutStorePostgres

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
            "DROP PROCEDURE workout_journal_commit", "DROP FUNCTION workout_journal_append",
            "DELETE FROM schema_migration WHERE version >= 3",
        ] { try TestPostgres.psql(url, statement) }
        #expect(try options("sample_chunk") == "")
        let reopened = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        defer { reopened.closeConnections() }
        #expect(try options("sample_chunk") == "fillfactor=70")
        #expect(try options("route_chunk") == "fillfactor=70")
        #expect(try TestPostgres.psql(url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migration") == "1,2,3,4,5,6,7")
        // And the store writes through the function migration 4 made (called by migration 6's procedure).
        let store = try reopened.store(athlete: athlete)
        let recording = try store.beginRecording(configuration: WorkoutConfiguration(activityType: .running), commitInterval: 0)
        try recording.session.start()
        try recording.builder.add([QuantitySample(.heartRate, 120, at: Date(), source: SourceDevice(name: "strap"))])
        try recording.commit()
        #expect(try recording.committedSamples().count == 1)
        try recording.discard()
    }

    /// A live session journaled by a schema-4 server (no continuity check in `workout_journal_append`) goes on
    /// after another server upgraded the database (to schema 5, and 6 since): the old writer's next commit and a new server's
    /// read-back both continue the journal as the check counts it, and the workout saved holds every sample once.
    @Test("a live journal of schema 4 goes on across the upgrade to 5 and saves every sample once")
    func aLiveJournalOfSchema4GoesOnAcrossTheUpgrade() throws {
        let database = try TestPostgres.ownDatabase("upgrade")
        defer { TestPostgres.drop(database) }
        let url = database.url
        let athlete = UUID()
        let strap = SourceDevice(name: "strap")
        func pulses(_ range: Range<Int>) -> [QuantitySample] {
            range.map { QuantitySample(.heartRate, 100 + Double($0), at: t(Double($0)), source: strap) }
        }
        func checks() throws -> String {
            try TestPostgres.psql(url, "SELECT prosrc LIKE '%WJ001%' FROM pg_proc WHERE proname = 'workout_journal_append'")
        }

        // The schema-4 server: its pool open, then the database as schema 4 left it behind its back (migration 4's
        // function, version 5 not recorded).
        let old = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        let oldStore = try old.store(athlete: athlete)
        for statement in [
            "DROP FUNCTION workout_journal_append", PostgresSchema.journalAppendFunction,
            "DELETE FROM schema_migration WHERE version >= 5",
        ] { try TestPostgres.psql(url, statement) }
        try #require(try checks() == "f", "the function of schema 4")
        let recording = try oldStore.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        for batch in 0..<3 {
            try recording.builder.add(pulses((batch * 10)..<(batch * 10 + 10)))
            try recording.builder.addMetadata(["batch": .int(batch + 1)])
            try recording.commit()
        }

        // Another server starts: the upgrade to 5. The old server's session commits once more, then it stops.
        let new = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        defer { new.closeConnections() }
        #expect(try TestPostgres.psql(url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migration") == "1,2,3,4,5,6,7")
        #expect(try checks() == "t", "the function of schema 5 (and 6)")
        try recording.builder.add(pulses(30..<40))
        try recording.builder.addMetadata(["batch": .int(4)])
        try recording.commit()
        try recording.close()
        old.closeConnections()

        // The new server reads the session back and records on to its end.
        let store = try new.store(athlete: athlete)
        let recovered = try #require(try store.recoverActiveSession(id: recording.id, commitInterval: 0))
        #expect(recovered.builder.metadata["batch"] == .int(4))
        try recovered.builder.add(pulses(40..<50))
        try recovered.builder.addMetadata(["batch": .int(5)])
        try recovered.commit()
        try recovered.session.end(at: t(50))
        let workout = try recovered.finish()
        #expect(try store.samples(workout: workout.id).map(\.start) == (0..<50).map { t(Double($0)) }, "every sample once")
        #expect(try store.journaledSessions().isEmpty)
    }

    @Test(
        "a database of schema 4 or 5 is brought up to date as a fresh install has it: a live journal begun before goes on through the new procedures",
        arguments: [4, 5])
    func upgradeBringsTheCommittingProcedure(from version: Int) throws {
        let database = try TestPostgres.ownDatabase("migrate")
        defer { TestPostgres.drop(database) }
        let url = database.url
        let athlete = UUID()
        let strap = SourceDevice(name: "strap")
        let first = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        let recording = try first.store(athlete: athlete).beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add([QuantitySample(.heartRate, 120, at: t(1), source: strap)])
        try recording.commit()
        first.closeConnections()

        // The database as schema `version` left it: no procedure; schema `version`'s own function (at 4 without the
        // journal check, at 5 with it, reading `max(seq)`).
        try TestPostgres.psql(url, "DROP PROCEDURE workout_journal_commit")
        try TestPostgres.psql(url, "DROP PROCEDURE workout_journal_commit_group")
        try TestPostgres.psql(url, "DROP FUNCTION workout_journal_append")
        try TestPostgres.psql(
            url, version == 4 ? PostgresSchema.journalAppendFunction : PostgresSchema.journalAppendInStepFunction)
        try TestPostgres.psql(url, "DELETE FROM schema_migration WHERE version > \(version)")
        func procedures() throws -> String {
            try TestPostgres.psql(
                url,
                "SELECT count(*) FROM pg_proc WHERE proname IN ('workout_journal_commit', 'workout_journal_commit_group') "
                    + "AND prokind = 'p'")
        }
        func checksTheJournal() throws -> Bool {
            try TestPostgres.psql(url, "SELECT prosrc FROM pg_proc WHERE proname = 'workout_journal_append'").contains("WJ001")
        }
        #expect(try procedures() == "0")
        #expect(try checksTheJournal() == (version == 5))
        #expect(
            try TestPostgres.psql(url, "SELECT prosrc FROM pg_proc WHERE proname = 'workout_journal_append'")
                .contains("max(seq)") == (version == 5), "schema \(version)'s function before the upgrade")

        let reopened = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        defer { reopened.closeConnections() }
        #expect(try TestPostgres.psql(url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migration") == "1,2,3,4,5,6,7")
        #expect(try procedures() == "2")
        #expect(try checksTheJournal(), "migration 5's check is in place after the upgrade from \(version)")
        let source = try TestPostgres.psql(url, "SELECT prosrc FROM pg_proc WHERE proname = 'workout_journal_append'")
        #expect(
            source.contains("ORDER BY seq DESC LIMIT 1") && !source.contains("max(seq)"),
            "migration 6 reads the last change by the key's order")
        // What the upgrade installed is what a fresh install has, to the byte: the function and the procedure.
        let fresh = try TestPostgres.ownDatabase("fresh")
        defer { TestPostgres.drop(fresh) }
        let freshDatabase = try PostgresWorkoutDatabase(url: fresh.url, poolSize: 1)
        freshDatabase.closeConnections()
        for name in ["workout_journal_append", "workout_journal_commit", "workout_journal_commit_group"] {
            let definition = "SELECT pg_get_functiondef(oid) FROM pg_proc WHERE proname = '\(name)'"
            let upgraded = try TestPostgres.psql(url, definition)
            #expect(!upgraded.isEmpty)
            let installed = try TestPostgres.psql(fresh.url, definition)
            #expect(upgraded == installed, "\(name) after the upgrade from \(version)")
        }
        let resumed = try #require(
            try reopened.store(athlete: athlete).recoverActiveSession(
                id: recording.id, clock: ManualClock(t(1)), commitInterval: 0))
        try resumed.builder.add([QuantitySample(.heartRate, 130, at: t(2), source: strap)])
        try resumed.commit()
        #expect(try resumed.committedSamples().map(\.start) == [t(1), t(2)], "both batches, once each, in order")
        let seqs = try TestPostgres.psql(url, "SELECT string_agg(seq::text, ',' ORDER BY seq) FROM journal_change")
            .split(separator: ",").compactMap { Int64($0) }
        #expect(seqs.count > 2 && seqs == Array(0..<Int64(seqs.count)), "the journal is contiguous across the upgrade: \(seqs)")
        try resumed.discard()
    }
}
