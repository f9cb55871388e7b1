import Foundation
import Testing
import WorkoutStore
import WorkoutStorePostgres
@_exported import WorkoutTestSupport

// Test support for the store's test targets (WorkoutStoreTests, WorkoutStorePostgresTests): one pool on the
// test PostgreSQL for the whole test process, and a fresh store of either backend. Not a product.

/// The test PostgreSQL of scripts/test.sh (WorkoutTestSupport): one database for the whole run, one athlete
/// per store. Outside CI without WORKOUT_TEST_POSTGRES_URL the store tests run on SQLite only
/// (`Backend.available`); with CI=true and no server their PostgreSQL cases run and fail, never skip silently.
extension TestPostgres {
    /// One pool for every test of the process: a store is an athlete's partitions in it.
    private static let shared: Result<PostgresWorkoutDatabase, StoreError>? = url.map { url in
        Result { () throws(StoreError) in try PostgresWorkoutDatabase(url: url, poolSize: 6) }
    }

    /// The shared pool; throws, saying how to get a server, when there is none.
    public static func database() throws -> PostgresWorkoutDatabase {
        let shared = try #require(
            shared, "WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh (it starts a test PostgreSQL)")
        return try shared.get()
    }
}

/// A fresh store of one backend: a new SQLite file in a new folder, or a new athlete in the test PostgreSQL.
public struct StoreFixture {
    public let backend: Backend
    public let store: WorkoutStore
    /// A new temporary folder (holding the SQLite file); the caller removes it (`cleanup`).
    public let folder: URL
    /// The athlete whose partitions hold a PostgreSQL store.
    public let athlete: UUID

    public init(_ backend: Backend) throws {
        self.backend = backend
        folder = try temporaryFolder()
        athlete = UUID()
        switch backend {
        case .sqlite: store = try WorkoutStore(path: folder.appendingPathComponent("test.sqlite").path)
        case .postgres: store = try TestPostgres.database().store(athlete: athlete)
        }
    }

    /// A second store instance on the same data (what another process opening it would get).
    public func reopen() throws -> WorkoutStore {
        switch backend {
        case .sqlite: try WorkoutStore(path: store.path)
        case .postgres: try TestPostgres.database().store(athlete: athlete)
        }
    }

    public func cleanup() { try? FileManager.default.removeItem(at: folder) }
}
