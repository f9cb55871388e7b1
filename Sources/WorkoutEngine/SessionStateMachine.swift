import Foundation
import WorkoutModel

/// The states of a workout session (<doc:SessionAndBuilder#Session-states>), as in HKWorkoutSessionState.
public enum SessionState: String, Sendable, Codable, Hashable, CaseIterable {
    case notStarted
    case prepared
    case running
    case paused
    case stopped
    case ended
}

/// Why a session ended.
public enum SessionEndReason: String, Sendable, Codable, Hashable, CaseIterable {
    /// The user ended it.
    case user
    /// A pause ran longer than the allowed maximum.
    case pauseExpired
    /// A failure (sensor loss, storage error) forced the end.
    case failure
    /// Another session took over.
    case superseded
    /// The session was rebuilt from the journal after a crash, then ended.
    case recoveredThenEnded
}

/// The calls that move a session, with their dates.
public enum SessionCall: Sendable, Hashable {
    case prepare(at: Date)
    case start(at: Date)
    case pause(at: Date)
    case resume(at: Date)
    case stop(at: Date)
    case end(at: Date, reason: SessionEndReason)

    /// The call's name without its arguments, for messages and tables.
    public var kind: SessionCallKind {
        switch self {
        case .prepare: .prepare
        case .start: .start
        case .pause: .pause
        case .resume: .resume
        case .stop: .stop
        case .end: .end
        }
    }

    public var date: Date {
        switch self {
        case .prepare(let date), .start(let date), .pause(let date), .resume(let date), .stop(let date),
            .end(let date, _):
            date
        }
    }
}

/// The name of a session call.
public enum SessionCallKind: String, Sendable, Codable, Hashable, CaseIterable {
    case prepare, start, pause, resume, stop, end
    case beginNewActivity, endCurrentActivity, advanceLeg
}

/// One observed change of session state.
public struct SessionStateChange: Sendable, Hashable, Codable {
    public var from: SessionState
    public var to: SessionState
    public var date: Date
    /// Set when `to` is `ended`.
    public var endReason: SessionEndReason?

    public init(from: SessionState, to: SessionState, date: Date, endReason: SessionEndReason? = nil) {
        self.from = from
        self.to = to
        self.date = date
        self.endReason = endReason
    }
}

/// The session state table of <doc:SessionAndBuilder#Session-states> as a pure value: no clock, no I/O, no builder.
///
/// `apply` either moves to the table's next state and returns the change, or throws
/// `illegalTransition` (or `dateBeforePrevious` for a date earlier than the last change) and leaves
/// the machine exactly as it was.
public struct SessionStateMachine: Sendable, Hashable, Codable {
    public private(set) var state: SessionState = .notStarted
    public private(set) var startDate: Date?
    public private(set) var stopDate: Date?
    public private(set) var endDate: Date?
    public private(set) var endReason: SessionEndReason?
    /// Date of the last change; calls must not go back before it.
    public private(set) var lastChange: Date?

    public init() {}

    /// The state `call` leads to from `state`, or nil when the table forbids it.
    ///
    /// The activity calls (beginNewActivity, endCurrentActivity, advanceLeg) are legal while running
    /// or paused and keep the state.
    public static func target(of call: SessionCallKind, from state: SessionState) -> SessionState? {
        switch (call, state) {
        case (.prepare, .notStarted): .prepared
        case (.start, .notStarted), (.start, .prepared): .running
        case (.pause, .running): .paused
        case (.resume, .paused): .running
        case (.stop, .running), (.stop, .paused): .stopped
        case (.end, .prepared), (.end, .running), (.end, .paused), (.end, .stopped): .ended
        case (.beginNewActivity, .running), (.endCurrentActivity, .running), (.advanceLeg, .running): .running
        case (.beginNewActivity, .paused), (.endCurrentActivity, .paused), (.advanceLeg, .paused): .paused
        default: nil
        }
    }

    /// Checks `call` without changing anything; returns the change it would make.
    public func check(_ call: SessionCall) throws(EngineError) -> SessionStateChange {
        guard let next = Self.target(of: call.kind, from: state) else {
            throw .illegalTransition(call: call.kind, state: state)
        }
        if let lastChange, call.date < lastChange {
            throw .dateBeforePrevious(call: call.kind, date: call.date, previous: lastChange)
        }
        var reason: SessionEndReason?
        if case .end(_, let r) = call { reason = r }
        return SessionStateChange(from: state, to: next, date: call.date, endReason: reason)
    }

    /// Applies `call`: the next state per the table, or a typed error with the state unchanged.
    @discardableResult
    public mutating func apply(_ call: SessionCall) throws(EngineError) -> SessionStateChange {
        let change = try check(call)
        state = change.to
        lastChange = call.date
        switch call {
        case .start(let date): startDate = date
        case .stop(let date): stopDate = date
        case .end(let date, let reason):
            endDate = date
            endReason = reason
            if stopDate == nil, startDate != nil { stopDate = date }
        case .prepare, .pause, .resume: break
        }
        return change
    }
}
