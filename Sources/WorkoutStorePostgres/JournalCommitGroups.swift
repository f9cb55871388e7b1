import Foundation
import Synchronization
import WorkoutStore

/// Live sessions' journal commits waiting for a connection at the same moment, committed together: one
/// statement, one transaction and one WAL flush for the group (`CALL workout_journal_commit_group`, migration 7)
/// instead of one each.
///
/// A commit is queued, then its thread either becomes one of at most `committers` threads committing for the
/// queue, or waits until another one has committed it. A committer takes a pooled connection first and only then
/// takes the group: its own commit if no other committer has taken it meanwhile, then the oldest waiting ones, at
/// most `largestGroup` and never two of one session (the second waits for the next group, after the first), sorted
/// by athlete and session (the order their rows are locked in, so that two groups never wait for each other). A
/// group of one is committed as before (`CALL workout_journal_commit`). Each member keeps its own outcome: one
/// whose journal is gone or out of step is refused alone while the others are written; an error of the whole
/// statement (a row PostgreSQL refuses) makes the committer commit each member alone on the same connection, so
/// that only the member at fault fails. Every outcome is known only once PostgreSQL committed (the procedure
/// COMMITs before it answers).
///
/// A group is not interrupted when one member's client hangs up (it commits other clients' batches); a commit
/// still waiting when its caller is cancelled is withdrawn, as one waiting for a connection was.
final class JournalCommitGroups: Sendable {
    /// One waiting commit.
    struct Member: Sendable {
        let id: Int
        let athlete: UUID
        let commit: JournalCommit
    }

    private struct State {
        var nextID = 0
        /// Queued and not taken by a committer yet, oldest first.
        var waiting: [Member] = []
        /// Outcomes not collected yet by their callers: the session's workout row, or the refusal.
        var outcomes: [Int: Result<Int64, StoreError>] = [:]
        var committers = 0
        /// Groups of two or more committed, and their members (`statistics`).
        var groups = 0
        var grouped = 0
    }

    private let state = Mutex(State())
    private let changed = NSCondition()
    /// The most threads committing at once (each holds one pooled connection while it does).
    let committers: Int
    /// The most commits in one group.
    let largestGroup: Int

    init(committers: Int, largestGroup: Int = 32) {
        self.committers = max(1, committers)
        self.largestGroup = max(1, largestGroup)
    }

    /// Groups of two or more commits committed so far, and how many commits they held.
    var statistics: (groups: Int, commits: Int) { state.withLock { ($0.groups, $0.grouped) } }

    /// Commits queued and not taken by a committer yet.
    var waiting: Int { state.withLock { $0.waiting.count } }

    /// Commits `commit` of `athlete`'s session, alone or with others, on `pool`: the session's workout row once it
    /// is committed. Throws as a commit alone does: `sessionNotFound` (the journal is gone),
    /// `journalOutOfStep`, `timedOut` (cancelled while waiting), a database error.
    func commit(athlete: UUID, _ commit: JournalCommit, pool: ConnectionPool) throws(StoreError) -> Int64 {
        let id = state.withLock { state in
            state.nextID += 1
            state.waiting.append(Member(id: state.nextID, athlete: athlete, commit: commit))
            return state.nextID
        }
        changed.broadcast()
        while true {
            switch awaitTurn(id) {
            case .done(let outcome):
                return try outcome.get()
            case .commit:
                defer {
                    changed.lock()
                    state.withLock { $0.committers -= 1 }
                    changed.broadcast()
                    changed.unlock()
                }
                do {
                    try pool.transaction(single: true, committing: true) { transaction in
                        let group = take(first: id)
                        guard !group.isEmpty else { return }
                        // Other clients' batches: a hang-up of this one's client does not cut them off.
                        let outcomes = StoreCancellation.$current.withValue(nil) { Self.run(group, on: transaction, pool: pool) }
                        finish(group, outcomes)
                    }
                } catch {
                    // No connection (or this caller was cancelled before it got one): nothing was taken by this
                    // thread; its own commit fails unless another committer has it.
                    fail(id, error)
                }
            }
        }
    }

    private enum Turn {
        case done(Result<Int64, StoreError>)
        case commit
    }

    /// Waits until `id`'s outcome is known, or until `id` is still waiting and a committer's place is free (taken).
    private func awaitTurn(_ id: Int) -> Turn {
        changed.lock()
        defer { changed.unlock() }
        while true {
            let turn = state.withLock { state -> Turn? in
                if let outcome = state.outcomes.removeValue(forKey: id) { return .done(outcome) }
                guard state.waiting.contains(where: { $0.id == id }) else { return nil }
                if state.committers < committers {
                    state.committers += 1
                    return .commit
                }
                if StoreCancellation.current?.isCancelled == true {
                    state.waiting.removeAll { $0.id == id }
                    return .done(.failure(.timedOut))
                }
                return nil
            }
            if let turn { return turn }
            // Woken when an outcome is known or a committer's place frees; a cancellation is seen within 0.1 s.
            _ = changed.wait(until: Date().addingTimeInterval(0.1))
        }
    }

    /// Takes the group to commit: `first` if it is still waiting, then the oldest waiting commits, one per session,
    /// at most `largestGroup`.
    private func take(first: Int) -> [Member] {
        state.withLock { state -> [Member] in
            var group: [Member] = []
            var sessions = Set<UUID>()
            if let index = state.waiting.firstIndex(where: { $0.id == first }) {
                let member = state.waiting.remove(at: index)
                group.append(member)
                sessions.insert(member.commit.session)
            }
            var index = 0
            while index < state.waiting.count, group.count < largestGroup {
                let member = state.waiting[index]
                if sessions.insert(member.commit.session).inserted {
                    group.append(state.waiting.remove(at: index))
                } else {
                    index += 1
                }
            }
            if group.count > 1 {
                state.groups += 1
                state.grouped += group.count
            }
            return group
        }
    }

    private func finish(_ group: [Member], _ outcomes: [Result<Int64, StoreError>]) {
        changed.lock()
        state.withLock { state in
            for (member, outcome) in zip(group, outcomes) { state.outcomes[member.id] = outcome }
        }
        changed.broadcast()
        changed.unlock()
    }

    /// `id` failed with `error` before any committer took it (it is withdrawn); nothing when it was taken.
    private func fail(_ id: Int, _ error: StoreError) {
        changed.lock()
        state.withLock { state in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return }
            state.waiting.remove(at: index)
            state.outcomes[id] = .failure(error)
        }
        changed.broadcast()
        changed.unlock()
    }

    /// Commits `group` on `transaction`'s connection: each member's outcome, in `group`'s order. Never throws: a
    /// failure is the outcome of the members it concerns.
    static func run(_ group: [Member], on transaction: Transaction, pool: ConnectionPool) -> [Result<Int64, StoreError>] {
        // Rows are locked in the order of athlete and session, whichever group: two never wait for each other.
        let order = group.indices.sorted {
            (group[$0].athlete.uuidString, group[$0].commit.session.uuidString)
                < (group[$1].athlete.uuidString, group[$1].commit.session.uuidString)
        }
        let outcomes = runSorted(order.map { group[$0] }, on: transaction, pool: pool)
        var inOrder = outcomes
        for (sorted, index) in order.enumerated() { inOrder[index] = outcomes[sorted] }
        return inOrder
    }

    private static func runSorted(_ group: [Member], on transaction: Transaction, pool: ConnectionPool)
        -> [Result<Int64, StoreError>]
    {
        if group.count > 1 {
            do {
                return try commitTogether(group, on: transaction)
            } catch {
                // The statement wrote nothing. A time limit reached, a connection lost: every member fails alike
                // (alone each would wait as long again). A row PostgreSQL refused: each member alone, so that
                // only the one at fault fails.
                let state = ConnectionPool.sqlState(error) ?? ""
                if transaction.connection.isClosed || state.hasPrefix("57") || state.hasPrefix("08") {
                    return group.map { _ in .failure(pool.storeError(error)) }
                }
            }
        }
        return group.map { member in
            Result { () throws(StoreError) -> Int64 in
                do {
                    guard
                        let row = try PostgresBackend.append(
                            transaction, athlete: member.athlete, member.commit, committing: true)
                    else { throw StoreError.sessionNotFound(member.commit.session) }
                    return row
                } catch {
                    throw pool.storeError(error)
                }
            }
        }
    }

    /// One `CALL workout_journal_commit_group`: each member's workout row, or its refusal.
    private static func commitTogether(_ group: [Member], on transaction: Transaction) throws
        -> [Result<Int64, StoreError>]
    {
        let records = try transaction.runPrepared(PostgresBackend.groupSQL(group.map { ($0.athlete, $0.commit) }))
        guard let record = records.first else { throw UnexpectedAnswer(members: group.count, answered: 0) }
        let rows = try record.ints(0)
        let next = try record.ints(1)
        guard rows.count == group.count, next.count == group.count else {
            throw UnexpectedAnswer(members: group.count, answered: rows.count)
        }
        return group.indices.map { index in
            let session = group[index].commit.session
            if rows[index] >= 0 { return .success(rows[index]) }
            if next[index] >= 0 {
                let first = group[index].commit.entries.first?.seq ?? 0
                return .failure(
                    .journalOutOfStep(
                        session: session,
                        detail: "the journal continues at change \(next[index]), not at change \(first)"))
            }
            return .failure(.sessionNotFound(session))
        }
    }
}

/// `CALL workout_journal_commit_group` answered outcomes for another number of commits than it was given (its
/// members are then committed alone).
private struct UnexpectedAnswer: Error, CustomStringConvertible {
    let members: Int
    let answered: Int
    var description: String { "the group commit answered for \(answered) of \(members) commits" }
}
