import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import WorkoutStore

/// A value bound to a statement parameter (`$n`).
enum Bind: Sendable {
    case text(String?)
    case double(Double?)
    case int(Int64?)
    case bool(Bool)
    case uuid(UUID)
    case bytes([UInt8])
    case uuids([UUID])
    /// Arrays for `unnest($n::type[])`: one statement writes many rows (a journal commit's chunks and entries).
    case texts([String])
    case bools([Bool])
    case ints([Int64])
    case doubles([Double])
    case byteas([[UInt8]])
}

/// Builds a statement and its parameters: `sql.bind(.text("x"))` appends the value and returns `$n`.
struct SQL {
    var text = ""
    var binds: [Bind] = []

    init(_ text: String = "") { self.text = text }

    mutating func bind(_ value: Bind) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    func query() -> PostgresQuery {
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .text(let text): bindings.append(text)
            case .double(let number): bindings.append(number)
            case .int(let number): bindings.append(number)
            case .bool(let flag): bindings.append(flag)
            case .uuid(let id): bindings.append(id)
            case .bytes(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            case .uuids(let ids): bindings.append(ids)
            case .texts(let texts): bindings.append(PackedArray(elements: .texts(texts)))
            case .bools(let flags): bindings.append(PackedArray(elements: .bools(flags)))
            case .ints(let numbers): bindings.append(PackedArray(elements: .ints(numbers)))
            case .doubles(let numbers): bindings.append(numbers)
            case .byteas(let values): bindings.append(values.map { ByteBuffer(bytes: $0) })
            }
        }
        return PostgresQuery(unsafeSQL: text, binds: bindings)
    }

    /// The parameters as PostgresNIO's prepared statements take them (`PreparedQuery.execute`), encoded as
    /// `query()` encodes them.
    func data() throws -> [PostgresData] {
        func encoded(_ value: some PostgresThrowingDynamicTypeEncodable) throws -> PostgresData {
            var buffer = ByteBuffer()
            try value.encode(into: &buffer, context: .default)
            return PostgresData(type: value.psqlType, formatCode: value.psqlFormat, value: buffer)
        }
        return try binds.map { value in
            switch value {
            case .text(let text): try text.map(encoded) ?? PostgresData(type: .text)
            case .double(let number): try number.map(encoded) ?? PostgresData(type: .float8)
            case .int(let number): try number.map(encoded) ?? PostgresData(type: .int8)
            case .bool(let flag): try encoded(flag)
            case .uuid(let id): try encoded(id)
            case .bytes(let bytes): try encoded(ByteBuffer(bytes: bytes))
            case .uuids(let ids): try encoded(ids)
            case .texts(let texts): try encoded(PackedArray(elements: .texts(texts)))
            case .bools(let flags): try encoded(PackedArray(elements: .bools(flags)))
            case .ints(let numbers): try encoded(PackedArray(elements: .ints(numbers)))
            case .doubles(let numbers): try encoded(numbers)
            case .byteas(let values): try encoded(values.map { ByteBuffer(bytes: $0) })
            }
        }
    }
}

/// The statements prepared on one pooled connection, by their text: each lives on the server as long as the
/// connection does (`Transaction.runPrepared`).
final class PreparedStatements: Sendable {
    let byText = Mutex<[String: PreparedQuery]>([:])
}

/// A connection of the pool and the statements prepared on it.
struct PooledConnection: Sendable {
    let connection: PostgresConnection
    let prepared = PreparedStatements()
}

/// A row read back, by column position.
struct Record {
    let row: [PostgresCell]

    init(_ row: PostgresRow) { self.row = Array(row) }

    /// A row of a statement prepared with PostgresNIO's `prepare(query:)` (`Transaction.runPrepared`): PostgreSQL
    /// sends it in the binary format PostgresNIO asks for, but PostgresNIO labels its cells with the statement's
    /// description, taken before any format was asked for (text), and decoding them as text fails.
    init(prepared row: PostgresRow) {
        self.row = row.map { cell in
            var cell = cell
            cell.format = .binary
            return cell
        }
    }

    func text(_ index: Int) throws -> String { try row[index].decode(String.self) }
    func optionalText(_ index: Int) throws -> String? { try row[index].decode(String?.self) }
    func double(_ index: Int) throws -> Double { try row[index].decode(Double.self) }
    func optionalDouble(_ index: Int) throws -> Double? { try row[index].decode(Double?.self) }
    func int(_ index: Int) throws -> Int64 { try row[index].decode(Int64.self) }
    func optionalInt(_ index: Int) throws -> Int64? { try row[index].decode(Int64?.self) }
    func ints(_ index: Int) throws -> [Int64] { try row[index].decode([Int64].self) }
    func bool(_ index: Int) throws -> Bool { try row[index].decode(Bool.self) }
    func uuid(_ index: Int) throws -> UUID { try row[index].decode(UUID.self) }
    func bytes(_ index: Int) throws -> [UInt8] {
        var buffer = try row[index].decode(ByteBuffer.self)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }
}

/// One connection inside a transaction: runs statements synchronously (the store's API is synchronous).
struct Transaction {
    let connection: PostgresConnection
    let logger: Logger
    /// A team's read: `$1` is an array of athletes, and every `athlete = $1` reads `athlete = ANY($1)`.
    var team = false
    /// Whether a statement waited for may be cut off by closing its connection: only when the server ends a
    /// statement whose client went away (PostgreSQL 14 and later). On an older one the statement would run on
    /// to its end or time limit, holding a backend for no one, so the wait is not interrupted.
    var interruptible = true
    /// Whether each statement runs in a transaction of its own, committed by an explicit COMMIT (`runCommitted`):
    /// a single-statement write, whose success is acknowledged to a client.
    var commitsEach = false
    /// The statements prepared on this connection (`runPrepared`).
    var prepared: PreparedStatements?

    @discardableResult
    func run(_ sql: SQL) throws -> [Record] {
        var sql = sql
        if team { sql.text = sql.text.replacingOccurrences(of: "athlete = $1", with: "athlete = ANY($1)") }
        if commitsEach { return try runCommitted(sql.query()) }
        let query = sql.query()
        // postgres-nio writes a query to its channel without a promise: on a channel the server already closed
        // (a terminated backend, a PostgreSQL restart) the query's future never completes and `wait()` would
        // block forever. Checked and sent on the channel's event loop, so the channel cannot close in between.
        let (connection, logger) = (connection, logger)
        // The caller's cancellation (a server request whose client hung up): no statement starts once it is
        // cancelled, and the one waited for is cut off by closing the connection, which frees this thread at once
        // (PostgreSQL ends the statement when it next checks its client: `client_connection_check_interval`).
        let cancellation = StoreCancellation.current
        if cancellation?.isCancelled == true { throw StoreError.timedOut }
        let future = connection.eventLoop.flatSubmit { () -> EventLoopFuture<PostgresQueryResult> in
            guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(ConnectionClosed()) }
            return connection.query(query, logger: logger)
        }
        guard let cancellation, interruptible else { return try future.wait().rows.map(Record.init(_:)) }
        return try cancellation.whileWaiting(interrupt: { connection.close().whenComplete { _ in } }) {
            try future.wait().rows.map(Record.init(_:))
        }
    }

    @discardableResult
    func run(_ text: String) throws -> [Record] { try run(SQL(text)) }

    /// Runs `sql` as a named prepared statement of this connection: PostgreSQL parses and analyses it once per
    /// connection (on its first run there), then only binds and executes it. For a statement run very often whose
    /// text does not change (a live session's journal commit, `CALL workout_journal_commit`): its 34 arguments were
    /// parsed and analysed again on every commit, about a fifth of PostgreSQL's work per commit (docs/live-load.md).
    /// Answered as `run` answers (PostgreSQL's CommandComplete); not for `commitsEach` or a team's statements.
    @discardableResult
    func runPrepared(_ sql: SQL) throws -> [Record] {
        guard let prepared, !team, !commitsEach else { return try run(sql) }
        let (text, binds, connection) = (sql.text, try sql.data(), connection)
        let cancellation = StoreCancellation.current
        if cancellation?.isCancelled == true { throw StoreError.timedOut }
        // As in `run`: checked and sent on the channel's event loop, so that the channel cannot close in between
        // (a query written to a closed channel is never answered); the statement is prepared there first if needed.
        let future = connection.eventLoop.flatSubmit { () -> EventLoopFuture<[PostgresRow]> in
            guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(ConnectionClosed()) }
            if let statement = prepared.byText.withLock({ $0[text] }) { return statement.execute(binds) }
            return connection.prepare(query: text).flatMap { statement in
                guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(ConnectionClosed()) }
                prepared.byText.withLock { $0[text] = statement }
                return statement.execute(binds)
            }
        }
        guard let cancellation, interruptible else { return try future.wait().map(Record.init(prepared:)) }
        return try cancellation.whileWaiting(interrupt: { connection.close().whenComplete { _ in } }) {
            try future.wait().map(Record.init(prepared:))
        }
    }

    /// Runs `query` in a transaction of its own: `BEGIN`, the statement and `COMMIT`, handed to the connection
    /// together (PostgresNIO sends each as the previous one is answered, without a wait of this thread in between)
    /// and returns its rows only once the `COMMIT` answered with the tag `COMMIT`.
    ///
    /// A statement run alone (autocommit) is answered with its CommandComplete before PostgreSQL commits its
    /// implicit transaction, and PostgresNIO completes the query there: an error of the commit itself (a deferred
    /// constraint, an immediate shutdown that flushes the pending answer and exits before the commit record is
    /// written) came after a success already reported, and a journal commit that PostgreSQL never made was
    /// acknowledged to a client. The `COMMIT`'s answer is sent only once the commit is durable
    /// (`synchronous_commit = on`). A statement that fails makes the `COMMIT` answer `ROLLBACK`; its own error is
    /// thrown.
    private func runCommitted(_ query: PostgresQuery) throws -> [Record] {
        let (connection, logger) = (connection, logger)
        let cancellation = StoreCancellation.current
        if cancellation?.isCancelled == true { throw StoreError.timedOut }
        let future = connection.eventLoop.flatSubmit { () -> EventLoopFuture<PostgresQueryResult> in
            guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(ConnectionClosed()) }
            let begin = connection.query(PostgresQuery(unsafeSQL: "BEGIN"), logger: logger)
            let statement = connection.query(query, logger: logger)
            let commit = connection.query(PostgresQuery(unsafeSQL: "COMMIT"), logger: logger)
            // Every answer is waited for, so that the connection is out of the transaction when it is given back;
            // the first failure is the one thrown.
            return EventLoopFuture.whenAllComplete([begin, statement, commit], on: connection.eventLoop)
                .flatMapThrowing { results in
                    for case .failure(let error) in results { throw error }
                    guard case .success(let committed) = results[2], committed.metadata.command == "COMMIT",
                        case .success(let answer) = results[1]
                    else {
                        let tag = (try? results[2].get())?.metadata.command ?? "nothing"
                        throw NotCommitted(answer: tag)
                    }
                    return answer
                }
        }
        guard let cancellation, interruptible else { return try future.wait().rows.map(Record.init(_:)) }
        return try cancellation.whileWaiting(interrupt: { connection.close().whenComplete { _ in } }) {
            try future.wait().rows.map(Record.init(_:))
        }
    }
}

/// A transaction's `COMMIT` answered something else than `COMMIT` (PostgreSQL rolled it back): nothing was written.
struct NotCommitted: Error, CustomStringConvertible {
    let answer: String
    var description: String { "the transaction was not committed (PostgreSQL answered \(answer) to COMMIT)" }
}

/// A pooled connection the server has closed (it is dropped; the next transaction connects again).
struct ConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection was closed by the server (PostgreSQL restarted or ended it)" }
}

/// The connection settings from a `postgres://user[:password]@host[:port]/database` URL.
struct PostgresURL: Sendable {
    var configuration: PostgresConnection.Configuration
    /// The URL without its password, for messages.
    var redacted: String

    init(_ text: String) throws(StoreError) {
        guard let components = URLComponents(string: text),
            components.scheme == "postgres" || components.scheme == "postgresql", let host = components.host,
            !host.isEmpty
        else {
            throw .database(
                path: "PostgreSQL",
                detail: "'\(Self.withoutPassword(text).prefix(80))' is not a postgres://user@host[:port]/database URL")
        }
        let user = components.user ?? "postgres"
        let database = String(components.path.drop(while: { $0 == "/" }))
        let port = components.port ?? 5432
        configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: components.password,
            database: database.isEmpty ? user : database, tls: .disable)
        redacted = "postgres://\(user)@\(host):\(port)/\(database.isEmpty ? user : database)"
    }

    /// `text` (a URL, well formed or not) with the password of its `user:password@` replaced by `***`.
    ///
    /// The user part runs from after `://` to the last `@`, so a password holding `/`, `:` or `@` is hidden
    /// whole; text without a password is returned as it is.
    static func withoutPassword(_ text: String) -> String {
        let userStart = text.range(of: "://").map(\.upperBound) ?? text.startIndex
        guard let at = text[userStart...].lastIndex(of: "@"), let colon = text[userStart..<at].firstIndex(of: ":")
        else { return text }
        return String(text[...colon]) + "***" + String(text[at...])
    }
}

/// A bounded pool of connections used from synchronous code (each call blocks its thread, never an event loop).
final class ConnectionPool: Sendable {
    let url: PostgresURL
    let logger: Logger
    private let idle = Mutex<[PooledConnection]>([])
    private let slots: DispatchSemaphore
    private let nextID = Atomic<Int>(0)
    /// Each statement's time limit, seconds (0: none): the connection's `statement_timeout`.
    let statementTimeout: Double
    /// Connections lent to each caller (`StoreCancellation.caller`) now, and the most one caller may hold: half
    /// the pool, so that one athlete's slow queries always leave connections for the others whatever the pool's
    /// size (the server's share of store threads alone did not with a pool of 8 or fewer).
    private let lent = Mutex<[String: Int]>([:])
    /// Whether the server checks that a statement's client is still there (`client_connection_check_interval`,
    /// PostgreSQL 14 and later), read as each connection opens: only then is a cancelled caller's statement cut
    /// off (`Transaction.interruptible`).
    private let checksClient = Atomic<Bool>(true)
    private let returned = NSCondition()
    let perCaller: Int

    init(url: PostgresURL, size: Int, statementTimeout: Double = 0) {
        self.url = url
        self.statementTimeout = statementTimeout
        var logger = Logger(label: "workout.postgres")
        logger.logLevel = .warning
        self.logger = logger
        slots = DispatchSemaphore(value: max(1, size))
        perCaller = max(1, size / 2)
    }

    /// Waits until `caller` holds fewer than its share of connections, then counts one more for it; false when the
    /// caller's work is cancelled meanwhile.
    private func lend(to caller: String, cancellation: StoreCancellation) -> Bool {
        returned.lock()
        defer { returned.unlock() }
        while lent.withLock({ $0[caller, default: 0] }) >= perCaller {
            if cancellation.isCancelled { return false }
            // Woken when a connection comes back; a cancellation is noticed within a tenth of a second.
            _ = returned.wait(until: Date().addingTimeInterval(0.1))
        }
        lent.withLock { $0[caller, default: 0] += 1 }
        return true
    }

    private func giveBack(from caller: String) {
        returned.lock()
        lent.withLock { lent in
            let left = lent[caller, default: 1] - 1
            lent[caller] = left > 0 ? left : nil
        }
        returned.broadcast()
        returned.unlock()
    }

    deinit {
        // The last reference may go on an event loop thread (a server's handler finishing as it shuts down),
        // where waiting on a future traps: the idle connections are told to close, not waited for. Each stays
        // referenced by its completion handler until it is closed (PostgresNIO asserts on an open one's deinit).
        for pooled in idle.withLock({ $0 }) {
            let connection = pooled.connection
            connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
        }
    }

    /// Closes the idle connections and waits for them to close (not on an event loop thread).
    func closeIdle() {
        for connection in idle.withLock({ connections in
            defer { connections.removeAll() }
            return connections
        }) {
            _ = try? connection.connection.close().wait()
        }
    }

    /// Runs `body` in one transaction on a pooled connection: committed when it returns, rolled back when it throws.
    ///
    /// With `single`, `body` runs one statement. A read runs alone, without BEGIN and COMMIT (two round trips
    /// fewer); a write runs between BEGIN and COMMIT handed to the connection with it (`Transaction.runCommitted`):
    /// it returns only once PostgreSQL answered that it committed. With `single` and `committing`, the statement
    /// commits itself before it is answered (a CALL of a procedure that COMMITs, `workout_journal_commit`) and runs
    /// alone: one round trip, acknowledged only once committed.
    ///
    /// With `snapshot` (a read of several statements that must agree, a journal's session, changes and chunks), the
    /// transaction is REPEATABLE READ: every statement sees the database as of the first one.
    func transaction<T>(
        readOnly: Bool = false, single: Bool = false, committing: Bool = false, team: Bool = false,
        snapshot: Bool = false, _ body: (Transaction) throws -> T
    ) throws(StoreError) -> T {
        // A statement that commits itself cannot run inside BEGIN (PostgreSQL refuses its COMMIT): always alone.
        let single = single || committing
        // One caller's share first (its other work waits here, not for the whole pool), then any free connection.
        let cancellation = StoreCancellation.current
        var counted: String?
        if let cancellation, let caller = cancellation.caller, cancellation.connectionsHeld.load(ordering: .relaxed) == 0 {
            guard lend(to: caller, cancellation: cancellation) else { throw .timedOut }
            counted = caller
        }
        cancellation?.connectionsHeld.add(1, ordering: .relaxed)
        defer {
            cancellation?.connectionsHeld.subtract(1, ordering: .relaxed)
            if let counted { giveBack(from: counted) }
        }
        slots.wait()
        defer { slots.signal() }
        let pooledConnection: PooledConnection
        do {
            // Connections the server closed while idle are dropped, not handed out.
            var pooled = idle.withLock { $0.popLast() }
            while let closed = pooled, closed.connection.isClosed { pooled = idle.withLock { $0.popLast() } }
            if let pooled {
                pooledConnection = pooled
            } else {
                let connection = try PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.next(), configuration: url.configuration,
                    id: nextID.add(1, ordering: .relaxed).newValue, logger: logger
                ).wait()
                // A commit is acknowledged to clients (live batches): it must be durable whatever the server's
                // default (synchronous_commit = off would lose the last commits when PostgreSQL crashes). The
                // journal's continuity checks (a session row locked, then its last change read) need each
                // statement to see what committed before the lock was granted: READ COMMITTED, whatever the
                // server's default_transaction_isolation (snapshot reads ask for REPEATABLE READ themselves).
                _ = try connection.query(
                    PostgresQuery(
                        unsafeSQL: "SELECT set_config('synchronous_commit', 'on', false), "
                            + "set_config('default_transaction_isolation', 'read committed', false)"),
                    logger: logger
                ).wait()
                // Every statement is cancelled by the server past the limit (a query planned for minutes, a lock
                // held by another client): it answers 57014 (query_canceled), `StoreError.timedOut`.
                if statementTimeout > 0, statementTimeout.isFinite {
                    let milliseconds = Int(min(statementTimeout * 1000, Double(Int32.max)).rounded(.up))
                    _ = try connection.query(
                        PostgresQuery(unsafeSQL: "SET statement_timeout TO \(milliseconds)"), logger: logger
                    ).wait()
                }
                // A statement whose caller went away (its connection closed by a `StoreCancellation`) is ended
                // within a second, not run to its end or time limit: PostgreSQL 14 and later check that the
                // client is still there while a statement runs (older servers do not know the setting).
                let checking = try connection.query(
                    PostgresQuery(
                        unsafeSQL: "SELECT set_config('client_connection_check_interval', '1000', false) "
                            + "WHERE current_setting('server_version_num')::int >= 140000"), logger: logger
                ).wait()
                checksClient.store(!checking.rows.isEmpty, ordering: .relaxed)
                pooledConnection = PooledConnection(connection: connection)
            }
        } catch {
            throw .database(path: url.redacted, detail: "cannot connect (\(Self.describe(error)))")
        }
        let connection = pooledConnection.connection
        let transaction = Transaction(
            connection: connection, logger: logger, team: team,
            interruptible: checksClient.load(ordering: .relaxed), commitsEach: single && !readOnly && !committing,
            prepared: pooledConnection.prepared)
        do {
            if !single {
                let isolation = snapshot ? " ISOLATION LEVEL REPEATABLE READ" : ""
                try transaction.run("BEGIN" + isolation + (readOnly ? (snapshot ? "," : "") + " READ ONLY" : ""))
            }
            let result = try body(transaction)
            if !single { try transaction.run("COMMIT") }
            putBack(pooledConnection, cancellation: cancellation)
            return result
        } catch {
            // A connection that failed mid-transaction is not reused (it may be broken or still in the transaction).
            if single {
                putBack(pooledConnection, cancellation: cancellation)
            } else if (try? transaction.run("ROLLBACK")) != nil {
                putBack(pooledConnection, cancellation: cancellation)
            } else {
                _ = try? connection.close().wait()
            }
            throw storeError(error)
        }
    }

    /// `error` of a statement as the store reports it: a `StoreError` as it is, a statement past its time limit
    /// (SQLSTATE 57014) `timedOut`, anything else a database error naming the database (its URL without password).
    func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if Self.sqlState(error) == "57014" { return .timedOut }
        return .database(path: url.redacted, detail: Self.describe(error))
    }

    /// Gives `connection` back to the idle ones, or closes it when it is closed or closing: the server ended it, or
    /// the caller's work is cancelled (its close may have been scheduled by the cancellation and not have happened
    /// yet: lent to another caller, the connection would be closed under that caller's statement).
    private func putBack(_ pooled: PooledConnection, cancellation: StoreCancellation?) {
        if cancellation?.isCancelled == true || pooled.connection.isClosed {
            _ = try? pooled.connection.close().wait()
        } else {
            idle.withLock { $0.append(pooled) }
        }
    }

    static func describe(_ error: any Error) -> String {
        // A prepared statement's error (`Transaction.runPrepared`): PostgresNIO's older error type.
        if case .server(let server) = error as? PostgresError, let message = server.fields[.message] {
            return "\(message) (SQLSTATE \(server.fields[.sqlState] ?? "?"))"
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            return "\(error.code)"
        }
        return String(describing: error)
    }

    static func sqlState(_ error: any Error) -> String? {
        if case .server(let server) = error as? PostgresError { return server.fields[.sqlState] }
        return (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}

/// An array parameter written in PostgreSQL's binary array format in one pass, its size worked out first: PostgresNIO
/// encodes an array element by element through its generic path (a buffer capacity check and exclusivity checks per
/// element), which made the journal entries of an import's intermediate commits (thousands of seq, kind, count and
/// payload values each) cost an upload about 8 % more instructions (docs/live-load.md).
struct PackedArray: PostgresDynamicTypeEncodable {
    enum Elements {
        case ints([Int64])
        case bools([Bool])
        case texts([String])
    }

    let elements: Elements

    var psqlType: PostgresDataType {
        switch elements {
        case .ints: .int8Array
        case .bools: .boolArray
        case .texts: .textArray
        }
    }

    var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        // Header: dimensions, has-nulls flag, element type, then the one dimension's length and lower bound.
        let (count, element, payload): (Int, PostgresDataType, Int) =
            switch elements {
            case .ints(let values): (values.count, .int8, values.count * 12)
            case .bools(let values): (values.count, .bool, values.count * 5)
            case .texts(let values): (values.count, .text, values.reduce(0) { $0 + 4 + $1.utf8.count })
            }
        guard count > 0 else {
            // An empty array: no dimensions.
            buffer.writeMultipleIntegers(Int32(0), Int32(0), element.rawValue, endianness: .big)
            return
        }
        buffer.reserveCapacity(minimumWritableBytes: 20 + payload)
        buffer.writeMultipleIntegers(Int32(1), Int32(0), element.rawValue, Int32(count), Int32(1), endianness: .big)
        switch elements {
        case .ints(let values):
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: payload) { raw in
                var offset = 0
                for value in values {
                    raw.storeBytes(of: Int32(8).bigEndian, toByteOffset: offset, as: Int32.self)
                    raw.storeBytes(of: value.bigEndian, toByteOffset: offset + 4, as: Int64.self)
                    offset += 12
                }
                return offset
            }
        case .bools(let values):
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: payload) { raw in
                var offset = 0
                for value in values {
                    raw.storeBytes(of: Int32(1).bigEndian, toByteOffset: offset, as: Int32.self)
                    raw.storeBytes(of: value ? 1 : 0, toByteOffset: offset + 4, as: UInt8.self)
                    offset += 5
                }
                return offset
            }
        case .texts(let values):
            for value in values {
                buffer.writeInteger(Int32(value.utf8.count), endianness: .big)
                buffer.writeString(value)
            }
        }
    }
}
