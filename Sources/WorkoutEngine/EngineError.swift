import Foundation
import WorkoutModel

/// The lifecycle of a live builder (<doc:SessionAndBuilder#What-HealthKit-leaves-unsaid>).
public enum BuilderState: String, Sendable, Codable, Hashable {
    case notStarted
    case collecting
    case ended
    case finished
    case discarded
}

/// Everything a caller of the session or builder can get wrong; each says what and what to do.
///
/// Whenever one is thrown, nothing changed: the session state, the builder, its statistics and
/// the sink are exactly as before the call.
public enum EngineError: Error, Sendable, Equatable, CustomStringConvertible {
    case illegalTransition(call: SessionCallKind, state: SessionState)
    case dateBeforePrevious(call: SessionCallKind, date: Date, previous: Date)
    case builderState(operation: String, state: BuilderState)
    case invalidSample(SampleValidationError)
    case sampleOutsideWorkout(QuantityType, start: Date, end: Date, workoutStart: Date, workoutEnd: Date?)
    case invalidRoutePoint(date: Date)
    case routePointOutsideWorkout(date: Date)
    case eventOutsideWorkout(WorkoutEventType, start: Date, end: Date)
    case invalidEventDuration(WorkoutEventType, duration: TimeInterval)
    case overlappingLap(start: Date, end: Date)
    case pauseEventOutOfOrder(WorkoutEventType, date: Date, previous: Date)
    case beforeSettledData(operation: String, date: Date, settled: Date)
    case activityOverlap(start: Date, end: Date?, existingStart: Date, existingEnd: Date?)
    case activityOutsideWorkout(start: Date, end: Date?)
    case activityEndBeforeStart(start: Date, end: Date)
    case activityStillOpen(start: Date)
    case activityWouldBeEmpty(start: Date)
    case activityNotFound(UUID)
    case noCurrentActivity
    case noNextLeg(WorkoutActivityType)
    /// `advanceToNextLeg` past a leg sequence's (`BuilderOptions.legs`) last planned leg: a stated sequence's sports,
    /// or a detected one, which plans no leg ahead (its legs found so far).
    case noNextPlannedLeg(sports: [WorkoutActivityType], detected: Bool)
    case endBeforeStart(start: Date, end: Date)
    case endBeforeRecordedData(end: Date, latest: Date)
    case invalidConfiguration(String)
    case invalidOption(String)
    case invalidMetadata(key: String)
    /// A lap event's pool-length metadata (kind, strokes, style) is malformed.
    case invalidLength(start: Date, problem: String)
    /// Heart-rate recovery asked for before exercise stopped, or after it was finished.
    case recoveryState(String)

    public var description: String {
        switch self {
        case .illegalTransition(let call, let state):
            let legal = SessionState.allCases.filter { SessionStateMachine.target(of: call, from: $0) != nil }
            let hint =
                legal.isEmpty
                ? "" : " (it is legal from: \(legal.map(\.rawValue).joined(separator: ", ")))"
            return "cannot \(call.rawValue) a session that is \(state.rawValue)\(hint); the state is unchanged"
        case .dateBeforePrevious(let call, let date, let previous):
            return "cannot \(call.rawValue) at \(date): it is before the session's previous change at \(previous); "
                + "pass a date at or after it"
        case .builderState(let operation, let state):
            let hint: String =
                switch state {
                case .notStarted: "call beginCollection first"
                case .finished: "the workout is finished and immutable; start a new builder"
                case .discarded: "the workout was discarded; start a new builder"
                case .collecting: "end collection first"
                case .ended: "collection has ended"
                }
            return "cannot \(operation) while the builder is \(state.rawValue): \(hint)"
        case .invalidSample(let error):
            return error.description
        case .sampleOutsideWorkout(let type, let start, let end, let workoutStart, let workoutEnd):
            return "\(type.rawValue) sample \(start)...\(end) lies outside the workout \(workoutStart)..."
                + "\(workoutEnd.map { "\($0)" } ?? "now"); samples must lie inside the workout"
        case .invalidRoutePoint(let date):
            return "route point at \(date) has an impossible coordinate or a non-finite value; "
                + "latitude must be in -90...90 and longitude in -180...180"
        case .routePointOutsideWorkout(let date):
            return "route point at \(date) lies outside the workout; route points must lie inside it"
        case .eventOutsideWorkout(let type, let start, let end):
            return "\(type.rawValue) event \(start)...\(end) lies outside the workout; events must lie inside it"
        case .invalidEventDuration(let type, let duration):
            return type.hasDuration
                ? "\(type.rawValue) event has an impossible duration \(duration) s; it must be finite and >= 0"
                : "\(type.rawValue) event has duration \(duration) s, but only lap and segment events span time; "
                    + "give it duration 0"
        case .overlappingLap(let start, let end):
            return "lap \(start)...\(end) overlaps an existing lap; laps must not overlap (segments may)"
        case .pauseEventOutOfOrder(let type, let date, let previous):
            return "\(type.rawValue) event at \(date) is earlier than the previous pause/resume event at "
                + "\(previous); add pause and resume events in time order"
        case .beforeSettledData(let operation, let date, let settled):
            return "cannot \(operation) at \(date): samples up to \(settled) are already settled into "
                + "statistics; make the change at or after that instant, or raise the builder's reorderWindow"
        case .activityOverlap(let start, let end, let existingStart, let existingEnd):
            return "activity \(start)...\(end.map { "\($0)" } ?? "open") overlaps the activity "
                + "\(existingStart)...\(existingEnd.map { "\($0)" } ?? "open"); activities must not overlap"
        case .activityOutsideWorkout(let start, let end):
            return "activity \(start)...\(end.map { "\($0)" } ?? "open") lies outside the workout; "
                + "activities must lie inside it"
        case .activityEndBeforeStart(let start, let end):
            return "activity ends (\(end)) before it starts (\(start)); fix the dates"
        case .activityStillOpen(let start):
            return "the activity that started at \(start) is still open; end it first "
                + "(or use the session's beginNewActivity, which does both at one instant)"
        case .activityWouldBeEmpty(let start):
            return "the current activity began at \(start), the instant given for the next one; an activity "
                + "cannot be empty: begin the next one at a later date"
        case .activityNotFound(let id):
            return "no activity with id \(id) in this workout"
        case .noCurrentActivity:
            return "there is no current activity to end; begin one first"
        case .noNextLeg(let type):
            return "the \(type.rawValue) plan has no leg after the current one; stop the session instead"
        case .noNextPlannedLeg(let sports, let detected):
            let list = sports.map(\.rawValue).joined(separator: ", ")
            if detected {
                return "this session's legs are detected from the sensors and none is planned after the current one"
                    + (sports.isEmpty ? "" : " (found so far: \(list))")
                    + "; begin the next leg with beginNewActivity(configuration:) naming its sport, or stop the session"
            }
            return "the stated leg sequence (\(list)) has no leg after the current one; stop the session instead"
        case .endBeforeStart(let start, let end):
            return "end \(end) is before the workout's start \(start); pass a later date"
        case .endBeforeRecordedData(let end, let latest):
            return "cannot end at \(end): data up to \(latest) is already recorded and would fall outside "
                + "the workout; end at or after \(latest)"
        case .invalidConfiguration(let detail):
            return "invalid workout configuration: \(detail)"
        case .invalidOption(let detail):
            return "invalid builder option: \(detail)"
        case .invalidMetadata(let key):
            return "metadata '\(key)' is not a finite value (NaN or infinite); drop the key or fix the value"
        case .invalidLength(let start, let problem):
            return "the pool length starting at \(start) is malformed: \(problem); fix the watch's length data"
        case .recoveryState(let detail):
            return "heart-rate recovery: \(detail)"
        }
    }
}
