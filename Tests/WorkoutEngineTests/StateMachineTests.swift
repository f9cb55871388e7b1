import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// DESIGN §4's state table, written out independently of the engine's own table.
private let expectedTable: [SessionCallKind: [SessionState: SessionState]] = [
    .prepare: [.notStarted: .prepared],
    .start: [.notStarted: .running, .prepared: .running],
    .pause: [.running: .paused],
    .resume: [.paused: .running],
    .stop: [.running: .stopped, .paused: .stopped],
    .end: [.prepared: .ended, .running: .ended, .paused: .ended, .stopped: .ended],
    .beginNewActivity: [.running: .running, .paused: .paused],
    .endCurrentActivity: [.running: .running, .paused: .paused],
    .advanceLeg: [.running: .running, .paused: .paused],
]

/// Drives a new swim-bike-run session to `state` through legal calls at t(0)...t(2).
private func session(in state: SessionState) throws -> (WorkoutSession, ManualClock) {
    let clock = ManualClock(t(0))
    let session = try WorkoutSession(
        configuration: WorkoutConfiguration(activityType: .swimBikeRun, swimmingLocationType: .openWater),
        clock: clock)
    switch state {
    case .notStarted: break
    case .prepared: try session.prepare(at: t(0))
    case .running: try session.start(at: t(1))
    case .paused:
        try session.start(at: t(1))
        try session.pause(at: t(2))
    case .stopped:
        try session.start(at: t(1))
        try session.stop(at: t(2))
    case .ended:
        try session.start(at: t(1))
        try session.end(at: t(2))
    }
    #expect(session.state == state)
    clock.set(t(10))
    return (session, clock)
}

private func call(_ kind: SessionCallKind, on session: WorkoutSession) throws(EngineError) {
    switch kind {
    case .prepare: try session.prepare(at: t(10))
    case .start: try session.start(at: t(10))
    case .pause: try session.pause(at: t(10))
    case .resume: try session.resume(at: t(10))
    case .stop: try session.stop(at: t(10))
    case .end: try session.end(at: t(10), reason: .user)
    case .beginNewActivity:
        try session.beginNewActivity(configuration: WorkoutConfiguration(activityType: .transition), at: t(10))
    case .endCurrentActivity: try session.endCurrentActivity(at: t(10))
    case .advanceLeg: try session.advanceToNextLeg(at: t(10))
    }
}

@Suite("Session state table")
struct StateMachineTests {
    @Test("every state × every call", arguments: SessionState.allCases, SessionCallKind.allCases)
    func everyStateEveryCall(state: SessionState, kind: SessionCallKind) throws {
        let (session, _) = try session(in: state)
        let before = session.builder.snapshot(at: t(10))
        let expected = expectedTable[kind]?[state]
        if let expected {
            try call(kind, on: session)
            #expect(session.state == expected)
        } else {
            #expect(throws: EngineError.illegalTransition(call: kind, state: state)) {
                try call(kind, on: session)
            }
            #expect(session.state == state)
            #expect(session.builder.snapshot(at: t(10)) == before, "a refused call must not touch the builder")
        }
    }

    @Test("the pure state machine agrees with the table", arguments: SessionState.allCases)
    func pureMachine(state: SessionState) {
        for kind in [SessionCallKind.prepare, .start, .pause, .resume, .stop, .end] {
            #expect(SessionStateMachine.target(of: kind, from: state) == expectedTable[kind]?[state])
        }
    }

    @Test func errorNamesCallAndState() {
        let message = EngineError.illegalTransition(call: .resume, state: .running).description
        #expect(message.contains("resume"))
        #expect(message.contains("running"))
        #expect(message.contains("paused"), "says where the call would be legal")
    }

    @Test func skippingTransientStatesIsLegal() throws {
        var machine = SessionStateMachine()
        try machine.apply(.start(at: t(0)))
        let change = try machine.apply(.end(at: t(5), reason: .failure))
        #expect(change == SessionStateChange(from: .running, to: .ended, date: t(5), endReason: .failure))
        #expect(machine.stopDate == t(5))
    }

    @Test func datesMustNotGoBack() throws {
        let (session, _) = try session(in: .running)
        #expect(throws: EngineError.dateBeforePrevious(call: .pause, date: t(0), previous: t(1))) {
            try session.pause(at: t(0))
        }
        #expect(session.state == .running)
        #expect(session.builder.events.isEmpty)
    }

    @Test func stateChangesAreObservableWithDatesAndEndReason() async throws {
        let clock = ManualClock(t(0))
        let session = try WorkoutSession(configuration: WorkoutConfiguration(activityType: .cycling), clock: clock)
        let first = session.stateChanges()
        let second = session.stateChanges()
        try session.prepare(at: t(0))
        try session.start(at: t(1))
        try session.pause(at: t(2))
        try session.resume(at: t(3))
        try session.stop(at: t(4))
        try session.end(at: t(5), reason: .pauseExpired)
        let expected = [
            SessionStateChange(from: .notStarted, to: .prepared, date: t(0)),
            SessionStateChange(from: .prepared, to: .running, date: t(1)),
            SessionStateChange(from: .running, to: .paused, date: t(2)),
            SessionStateChange(from: .paused, to: .running, date: t(3)),
            SessionStateChange(from: .running, to: .stopped, date: t(4)),
            SessionStateChange(from: .stopped, to: .ended, date: t(5), endReason: .pauseExpired),
        ]
        var seen: [SessionStateChange] = []
        for await change in first { seen.append(change) }  // finishes after `ended`
        #expect(seen == expected)
        var seenBySecond: [SessionStateChange] = []
        for await change in second { seenBySecond.append(change) }
        #expect(seenBySecond == expected)
        #expect(session.endReason == .pauseExpired)
        var afterEnd = 0
        for await _ in session.stateChanges() { afterEnd += 1 }
        #expect(afterEnd == 0, "a stream opened after the end finishes at once")
    }
}
