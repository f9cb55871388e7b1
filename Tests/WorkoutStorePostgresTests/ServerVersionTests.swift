import Foundation
import Testing
import WorkoutStore

@testable import WorkoutStorePostgres

/// The store needs PostgreSQL 11 or later (migration 6's procedure COMMITs inside its CALL). An older server failed
/// at migration 6 with PostgreSQL's own syntax error and no word of the version; it is now refused at connect, before
/// anything is written, with the version found, the one needed and what to do.
@Suite("PostgreSQL server version")
struct ServerVersionTests {
    @Test("a server older than PostgreSQL 11 is refused with the version found, the one needed and what to do")
    func anOldServerIsRefused() {
        for (number, shown) in [(100_023, "10.23"), (100_000, "10"), (90_624, "9.6.24"), (109_999, "10.9999")] {
            let refused = #expect(throws: StoreError.self) {
                try PostgresSchema.checkServerVersion(number, location: "postgres://db.example/workouts")
            }
            #expect(
                refused == .unsupportedServer(path: "postgres://db.example/workouts", found: number, needed: 110_000))
            let message = refused?.description ?? ""
            #expect(message.contains("PostgreSQL \(shown) (server_version_num \(number))"), "\(message)")
            #expect(message.contains("needs PostgreSQL 11 or later"), "\(message)")
            #expect(message.contains("upgrade the server"), "\(message)")
        }
    }

    @Test("PostgreSQL 11 and later pass", arguments: [110_000, 110_022, 150_018, 170_000, 180_000])
    func elevenAndLaterPass(_ number: Int) throws {
        try PostgresSchema.checkServerVersion(number, location: "postgres://db.example/workouts")
    }

    @Test(
        "the test server passes: its version is read at connect and the schema migrates",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
    func theRealServerPasses() throws {
        let database = try TestPostgres.ownDatabase("version")
        defer { TestPostgres.drop(database) }
        let number = try #require(Int(try TestPostgres.psql(database.url, "SHOW server_version_num")))
        try PostgresSchema.checkServerVersion(number, location: database.url)
        let opened = try PostgresWorkoutDatabase(url: database.url, poolSize: 2)
        defer { opened.closeConnections() }
        let migrated = try TestPostgres.psql(database.url, "SELECT max(version) FROM schema_migration")
        #expect(migrated == "\(PostgresSchema.version)")
        let readOnly = try PostgresWorkoutDatabase(url: database.url, poolSize: 1, readOnly: true)
        readOnly.closeConnections()
    }
}
