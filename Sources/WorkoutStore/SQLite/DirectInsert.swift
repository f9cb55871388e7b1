import Foundation
import GRDB
import GRDBSQLite

/// Runs a prepared write statement with values bound by SQLite's own calls, for the rows an import writes by the
/// hundred thousand (statistics).
///
/// GRDB's `execute(arguments:)` boxes every value into a `DatabaseValue` array before binding it: on a 2 GB Apple
/// Health export's import that was nearly as much of the saving thread's time as SQLite's inserts of the 420,000
/// statistics rows themselves. Here each value is bound straight from its Swift type. For statements without a
/// transaction effect only (INSERT, UPDATE, DELETE): GRDB does not see them run, so they must not open, end or
/// name a transaction or savepoint, and the store registers no transaction observer that would miss them.
struct DirectInsert {
    private let statement: SQLiteStatement
    private let connection: SQLiteConnection?
    private var position: Int32 = 0

    /// Begins a run of `statement` (a cached statement of the writer's connection, on its queue).
    init(_ statement: Statement) {
        self.statement = statement.sqliteStatement
        connection = sqlite3_db_handle(statement.sqliteStatement)
        sqlite3_reset(self.statement)
    }

    /// Binds the next parameter: a number, or NULL for nil.
    mutating func bind(_ value: Double?) {
        position += 1
        if let value { sqlite3_bind_double(statement, position, value) } else { sqlite3_bind_null(statement, position) }
    }

    /// Binds the next parameter: an integer, or NULL for nil.
    mutating func bind(_ value: Int64?) {
        position += 1
        if let value { sqlite3_bind_int64(statement, position, value) } else { sqlite3_bind_null(statement, position) }
    }

    /// Binds the next parameter: a text (copied by SQLite).
    mutating func bind(_ value: String) {
        position += 1
        var text = value
        text.withUTF8 { bytes in
            // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
            _ = sqlite3_bind_text(
                statement, position, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                Int32(bytes.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }
    }

    /// Runs the statement with the values bound (every parameter must have been): throws SQLite's error as a
    /// `DatabaseError`. The statement is reset, its bindings kept until the next run binds its own.
    func run() throws {
        assert(position == sqlite3_bind_parameter_count(statement), "every parameter is bound")
        let code = sqlite3_step(statement)
        defer { sqlite3_reset(statement) }
        guard code == SQLITE_DONE else {
            let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
        }
    }
}
