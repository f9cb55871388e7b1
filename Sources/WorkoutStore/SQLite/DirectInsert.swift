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
    /// The first binding SQLite refused (its result code), thrown by `run()`.
    private var refused: Int32?

    /// Begins a run of `statement` (a cached statement of the writer's connection, on its queue).
    init(_ statement: Statement) {
        self.statement = statement.sqliteStatement
        connection = sqlite3_db_handle(statement.sqliteStatement)
        sqlite3_reset(self.statement)
    }

    /// Binds the next parameter: a number, or NULL for nil.
    mutating func bind(_ value: Double?) {
        position += 1
        note(value.map { sqlite3_bind_double(statement, position, $0) } ?? sqlite3_bind_null(statement, position))
    }

    /// Binds the next parameter: an integer, or NULL for nil.
    mutating func bind(_ value: Int64?) {
        position += 1
        note(value.map { sqlite3_bind_int64(statement, position, $0) } ?? sqlite3_bind_null(statement, position))
    }

    /// Binds the next parameter: a text (copied by SQLite).
    mutating func bind(_ value: String) {
        position += 1
        var text = value
        let code = text.withUTF8 { bytes in
            // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
            sqlite3_bind_text(
                statement, position, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                Int32(bytes.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }
        note(code)
    }

    private mutating func note(_ code: Int32) {
        if code != SQLITE_OK, refused == nil { refused = code }
    }

    /// Runs the statement with the values bound: throws SQLite's error as a `DatabaseError`, also when a binding
    /// was refused or not every parameter was bound (a value kept from the last run is never written). The
    /// statement is reset, its bindings kept until the next run binds its own.
    func run() throws {
        if let refused { throw DatabaseError(resultCode: ResultCode(rawValue: refused), message: "a value not bound") }
        let parameters = sqlite3_bind_parameter_count(statement)
        guard position == parameters else {
            throw DatabaseError(
                resultCode: .SQLITE_RANGE, message: "\(position) values bound of the statement's \(parameters)")
        }
        let code = sqlite3_step(statement)
        defer { sqlite3_reset(statement) }
        guard code == SQLITE_DONE else {
            let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
        }
    }
}
