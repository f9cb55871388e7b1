import Foundation
import Synchronization
import WorkoutStore

/// Live sessions' journal commits waiting for a connection at the same moment, committed together: one
/// statement, one transaction and one WAL flush for the group (`CALL workout_journal_commit_group`, migration 7)
/// instead of one each.
///
/// A commit is queued, then its thread either becomes one of at most `committers` threads committing for the
/// queue, or waits until another one has committed it. A committer takes a pooled connection first (outside its
/// caller's share of the pool: it commits for every caller) and only then takes the group: its own commit if no
/// other committer has taken it meanwhile, then the oldest waiting ones, at most `largestGroup` and never two of
/// one session (a session commits one batch at a time: `JournaledRecording`). A group of one is committed as
/// before (`CALL workout_journal_commit`). Each member keeps its own outcome: one whose journal is gone or out of
/// step is refused alone while the others are written; one whose session row another transaction holds locked is
/// committed alone after the group by its own thread, outside the committers' places (the procedure skips it
/// rather than wait); an error of the whole statement (a row PostgreSQL refuses) makes the committer commit each
/// member alone on the same connection, so that only the member at fault fails, except a time limit reached, a
/// connection lost or an answer not understood, which every member shares (none is committed twice). Every
/// outcome is known only once PostgreSQL committed (the procedure COMMITs before it answers).
///
/// A group is not interrupted when one member's client hangs up (it commits other clients' batches); a commit
/// still waiting when its caller is cancelled is withdrawn, as one waiting for a connection was.
final class JournalCommitGroups: Sendable {
    /// One waiting commit.
    struct Member: Sendable {
        let id: Int
        let athlete: UUID
        let commit: JournalCommit
        /// To be committed alone, by its own thread: a group skipped it because its row was locked.
        var alone = false
    }

    /// What has been committed how (`statistics`).
    struct Statistics: Sendable, Equatable {
        /// Group statements that committed, and the commits they wrote or refused (not those they skipped).
        var groups = 0
        var grouped = 0
        /// Commits committed alone although taken in a group: after the group's statement failed, or because
        /// their session's row was locked (counted once tried).
        var alone = 0
    }

    private struct State {
        var nextID = 0
        /// Queued and not taken by a committer yet, oldest first.
        var waiting: [Member] = []
        /// Outcomes not collected yet by their callers: the session's workout row, or the refusal.
        var outcomes: [Int: Result<Int64, StoreError>] = [:]
        var committers = 0
        var statistics = Statistics()
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

    var statistics: Statistics { state.withLock { $0.statistics } }

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
        while true {
            switch awaitTurn(id) {
            case .done(let outcome):
                return try outcome.get()
            case .alone(let member):
                // Skipped by a group because another transaction held its row: committed by itself, waiting for
                // the lock as any commit does, in this caller's own share of the pool and cut off if its client
                // hangs up (its own batch only), outside the committers' places (a long wait for a lock holds
                // none of them).
                let outcome = Result { () throws(StoreError) -> Int64 in
                    try pool.transaction(single: true, committing: true) { transaction in
                        try Self.commitAlone(member, on: transaction, pool: pool).get()
                    }
                }
                state.withLock { $0.statistics.alone += 1 }
                return try outcome.get()
            case .commit:
                defer {
                    changed.lock()
                    state.withLock { $0.committers -= 1 }
                    changed.broadcast()
                    changed.unlock()
                }
                do {
                    // Other callers' batches: neither this caller's share of the pool nor a hang-up of its client
                    // applies to them.
                    try StoreCancellation.$current.withValue(nil) {
                        try pool.transaction(single: true, committing: true) { transaction in
                            let group = take(first: id)
                            guard !group.isEmpty else { return }
                            let outcomes = run(group, on: transaction, pool: pool)
                            // Members whose row another transaction held locked wait again, each to be committed
                            // alone by its own thread (waiting for the lock as any commit does), so that this
                            // thread's own answer does not wait for that lock.
                            finish(
                                zip(group, outcomes).compactMap { member, outcome in outcome.map { (member, $0) } },
                                again: zip(group, outcomes).filter { $0.1 == nil }.map(\.0))
                        }
                    }
                } catch {
                    // No connection: nothing was taken by this thread; its own commit fails unless another
                    // committer has it.
                    fail(id, pool.storeError(error))
                }
            }
        }
    }

    private enum Turn {
        case done(Result<Int64, StoreError>)
        /// The caller's own commit, to be committed by itself (a group skipped it: its row was locked).
        case alone(Member)
        case commit
    }

    /// Waits until `id`'s outcome is known, or until `id` is still waiting and a committer's place is free (taken),
    /// or `id` is to be committed alone (taken out of the queue at once).
    private func awaitTurn(_ id: Int) -> Turn {
        changed.lock()
        defer { changed.unlock() }
        while true {
            let cancelled = StoreCancellation.current?.isCancelled == true
            let turn = state.withLock { state -> Turn? in
                if let outcome = state.outcomes.removeValue(forKey: id) { return .done(outcome) }
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                if cancelled {
                    state.waiting.remove(at: index)
                    return .done(.failure(.timedOut))
                }
                if state.waiting[index].alone { return .alone(state.waiting.remove(at: index)) }
                if state.committers < committers {
                    state.committers += 1
                    return .commit
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
            if let index = state.waiting.firstIndex(where: { $0.id == first }), !state.waiting[index].alone {
                let member = state.waiting.remove(at: index)
                group.append(member)
                sessions.insert(member.commit.session)
            }
            var index = 0
            while index < state.waiting.count, group.count < largestGroup {
                let member = state.waiting[index]
                if !member.alone, sessions.insert(member.commit.session).inserted {
                    group.append(state.waiting.remove(at: index))
                } else {
                    index += 1
                }
            }
            return group
        }
    }

    /// Hands out `outcomes` and queues `again` (first, each to be committed alone).
    private func finish(_ outcomes: [(Member, Result<Int64, StoreError>)], again: [Member] = []) {
        changed.lock()
        state.withLock { state in
            for (member, outcome) in outcomes { state.outcomes[member.id] = outcome }
            state.waiting.insert(
                contentsOf: again.map { member in
                    var member = member
                    member.alone = true
                    return member
                }, at: 0)
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

    /// Commits `group` on `transaction`'s connection: each member's outcome, in `group`'s order, nil for a member
    /// the group statement skipped because another transaction held its session's row locked (to be committed
    /// alone). A group of one is committed alone. Never throws: a failure is the outcome of the members it concerns.
    func run(_ group: [Member], on transaction: Transaction, pool: ConnectionPool) -> [Result<Int64, StoreError>?] {
        guard group.count > 1 else { return group.map { Self.commitAlone($0, on: transaction, pool: pool) } }
        // Sorted by athlete and session: the rows are locked in the same order whichever group.
        let order = group.indices.sorted {
            (group[$0].athlete.uuidString, group[$0].commit.session.uuidString)
                < (group[$1].athlete.uuidString, group[$1].commit.session.uuidString)
        }
        let sorted = order.map { group[$0] }
        let answer: [Record]
        do {
            answer = try transaction.runPrepared(PostgresBackend.groupSQL(sorted.map { ($0.athlete, $0.commit) }))
        } catch {
            // The statement wrote nothing. A time limit reached, a connection lost: every member fails alike
            // (alone each would wait as long again). A row PostgreSQL refused: each member alone, so that only
            // the one at fault fails.
            // An error PostgreSQL did not answer (no SQLSTATE: a connection closing, an answer not understood) may
            // come after the group committed: every member fails, none is committed again.
            guard let code = ConnectionPool.sqlState(error), !transaction.connection.isClosed, !code.hasPrefix("57"),
                !code.hasPrefix("08")
            else {
                return group.map { _ in .failure(pool.storeError(error)) }
            }
            state.withLock { $0.statistics.alone += group.count }
            return group.map { Self.commitAlone($0, on: transaction, pool: pool) }
        }
        // Committed: whatever goes wrong from here must not commit a member again.
        let outcomes: [GroupOutcome]
        do {
            outcomes = try Self.outcomes(answer, sorted)
        } catch {
            return group.map { _ in .failure(pool.storeError(error)) }
        }
        state.withLock { state in
            state.statistics.groups += 1
            state.statistics.grouped += outcomes.count { $0 != .locked }
        }
        var inOrder = [Result<Int64, StoreError>?](repeating: nil, count: group.count)
        for (position, index) in order.enumerated() {
            let member = sorted[position]
            inOrder[index] =
                switch outcomes[position] {
                case .written(let row): .success(row)
                case .outOfStep(let next):
                    .failure(
                        .journalOutOfStep(
                            session: member.commit.session,
                            detail: "the journal continues at change \(next), not at change "
                                + "\(member.commit.entries.first?.seq ?? 0)"))
                case .gone: .failure(.sessionNotFound(member.commit.session))
                case .locked: nil
                }
        }
        return inOrder
    }

    private enum GroupOutcome: Equatable {
        case written(Int64)
        case outOfStep(next: Int64)
        case gone
        case locked
    }

    /// The members' outcomes in a group statement's answer (`o_rows`, `o_next`).
    private static func outcomes(_ answer: [Record], _ members: [Member]) throws -> [GroupOutcome] {
        guard let record = answer.first else { throw UnexpectedAnswer(members: members.count, answered: 0) }
        let rows = try record.ints(0)
        let next = try record.ints(1)
        guard rows.count == members.count, next.count == members.count else {
            throw UnexpectedAnswer(members: members.count, answered: rows.count)
        }
        return zip(rows, next).map { row, next in
            if row >= 0 { return .written(row) }
            if row == -2 { return .locked }
            return next >= 0 ? .outOfStep(next: next) : .gone
        }
    }

    /// `member` committed by itself (`CALL workout_journal_commit`).
    static func commitAlone(_ member: Member, on transaction: Transaction, pool: ConnectionPool) -> Result<
        Int64, StoreError
    > {
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

/// `CALL workout_journal_commit_group` committed, but its answer does not hold one outcome per member: every
/// member fails (none is committed again).
private struct UnexpectedAnswer: Error, CustomStringConvertible {
    let members: Int
    let answered: Int
    var description: String { "the group commit answered for \(answered) of \(members) commits" }
}
