import Foundation
import PostgresNIO
import WorkoutStore

/// A value bound to, or read from, a plain SQL statement run through `PostgresWorkoutDatabase.transaction`.
///
/// Only the types small tables beside the workouts need (the server's directory of athletes and tokens);
/// PostgreSQL's own types stay inside this module.
public enum SQLValue: Sendable, Hashable {
    case null
    case text(String)
    case int(Int64)
    case double(Double)

    /// The text, or nil for anything else.
    public var text: String? { if case .text(let text) = self { text } else { nil } }
}

/// One transaction on a pooled connection: plain statements with `?` placeholders, run one at a time.
public struct PostgresStatements {
    let transaction: Transaction

    /// Runs `sql`, whose `?` placeholders (outside no literal: statements of ours) take `values` in order,
    /// and returns its rows (empty for statements without any).
    @discardableResult
    public func rows(_ sql: String, _ values: [SQLValue] = []) throws -> [[SQLValue]] {
        var statement = SQL()
        var remaining = values[...]
        for character in sql {
            guard character == "?" else {
                statement.text.append(character)
                continue
            }
            let value = remaining.popFirst() ?? .null
            switch value {
            case .null: statement.text += statement.bind(.text(nil))
            case .text(let text): statement.text += statement.bind(.text(text))
            case .int(let number): statement.text += statement.bind(.int(number))
            case .double(let number): statement.text += statement.bind(.double(number))
            }
        }
        return try transaction.run(statement).map { record in
            try (0..<record.row.count).map { index in try Self.value(record.row[index]) }
        }
    }

    private static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return .int(try cell.decode(Int64.self))
        case .float4, .float8, .numeric: return .double(try cell.decode(Double.self))
        case .bool: return .int(try cell.decode(Bool.self) ? 1 : 0)
        case .uuid: return .text(try cell.decode(UUID.self).uuidString)
        default: return .text(try cell.decode(String.self))
        }
    }
}

extension PostgresWorkoutDatabase {
    /// Runs `body` in one transaction on the database's pool: committed when it returns, rolled back when it
    /// throws (the error is rethrown as it is when it is `E`, else as `StoreError.database`).
    ///
    /// For small tables of the caller's own beside the workouts (the server's directory); the workouts are
    /// reached only through `store(athlete:)`. `single`: `body` runs one statement, which is its own transaction
    /// (a read without BEGIN and COMMIT; a write with them handed to the connection together, returning only once
    /// committed).
    public func transaction<T>(
        readOnly: Bool = false, single: Bool = false, _ body: (PostgresStatements) throws -> T
    ) throws -> T {
        var thrown: (any Error)?
        do {
            return try pool.transaction(readOnly: readOnly, single: single) { transaction in
                do {
                    return try body(PostgresStatements(transaction: transaction))
                } catch let error as StoreError {
                    throw error
                } catch let error as PSQLError {
                    throw error
                } catch {
                    thrown = error
                    throw error
                }
            }
        } catch {
            if let thrown { throw thrown }
            throw error
        }
    }
}
