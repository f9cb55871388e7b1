import Foundation
import WorkoutModel

/// Reads the elements of an Apple Health `export.xml` from the pull parser's events.
///
/// A `.workouts` pass hands each `Workout` whole (its metadata, events, activities, statistics and
/// routes) to a closure as its element ends, and counts the rest; the scanner holds one workout at a
/// time. A `.records` pass hands each quantity `Record` of a type the engine knows to a closure, and
/// keeps the heart-rate recovery records: records are the bulk of an export and are never all held.
/// A `.workoutsAndRecords` pass does both in one reading. Each pass has the parser skip the attributes it
/// does not need (`skipsAttributes`: checked, never made text).
final class HealthExportScanner {
    enum Pass { case workouts, records, workoutsAndRecords }

    let pass: Pass
    /// A `.records` pass: called with each quantity record of a known type and its source name.
    var onRecord: ((HealthRecord, String) -> Void)?
    /// A `.workouts` pass: called with each workout, in document order, as its element ends.
    var onWorkout: ((HealthWorkout) -> Void)?
    private(set) var recoveries: [HealthRecoveryRecord] = []
    private(set) var records = 0
    /// Records whose value, unit or dates cannot be read (left out, counted).
    private(set) var unreadableRecords = 0
    private(set) var correlations = 0
    /// Records read by `scanRecord` straight from the parser's buffer (the others came as events).
    private(set) var scannedRecords = 0
    private(set) var otherElements = 0
    private(set) var exportVersion: Int?
    private(set) var locale: String?
    /// Whether the document looked like an export at all (a `HealthData` root or a top-level
    /// `Workout`/`Record`).
    private(set) var sawExport = false

    /// Where the start tag of the element being handled began (set by the pass before each event).
    var tagStart = XMLPosition(offset: 0, line: 1, column: 1)

    private var stack: [String] = []
    private var workout: HealthWorkout?
    private var activity: HealthActivity?
    private var event: (HealthEvent, inActivity: Bool)?
    private var route: HealthRoute?
    private var recoveryRecord: HealthRecoveryRecord?
    /// The last type, unit and source name `scanRecord` read, by their bytes (records come grouped by type and
    /// source: most records make no text of them).
    private var lastType = LastRead<RecordKind>(value: .other)
    private var lastUnit = LastRead<QuantityUnit?>(value: nil)
    private var lastSource = LastRead<String>(value: "")

    /// - Parameter inside: the elements open where the scanned part begins (`["HealthData"]`: a part read from
    ///   between two of the root's children).
    init(pass: Pass, inside: [String] = []) {
        self.pass = pass
        stack = inside
    }

    /// Whether this pass needs nothing of the attributes of `element` (inside `parent`): a workouts pass
    /// reads only the root's and the workouts' (with everything inside them), a records pass the root's, the
    /// top-level records' and a heart-rate recovery record's metadata, a pass of both the union.
    func skipsAttributes(of element: String, in parent: String?) -> Bool {
        if element == "HealthData" { return false }
        if pass != .records, workout != nil || (element == "Workout" && atTopLevel) { return false }
        if pass != .workouts {
            if element == "Record" { return !atTopLevel }
            if element == "MetadataEntry", parent == "Record", recoveryRecord != nil { return false }
        }
        return true
    }

    /// Whether this pass needs nothing of the attribute `attribute` of `element` (whose attributes are read): a
    /// records pass reads of a record only its type, unit, value, dates and source (its `device`, `creationDate`
    /// and `sourceVersion`, the longest, are checked only).
    func skipsAttribute(_ attribute: String, of element: String) -> Bool {
        pass != .workouts && element == "Record"
            && (attribute == "device" || attribute == "creationDate" || attribute == "sourceVersion")
    }

    private static func value(_ attributes: [XMLAttribute], _ name: String) -> String? {
        for attribute in attributes where attribute.name == name { return attribute.value }
        return nil
    }

    /// Whether an element with this parent is a top-level data element.
    private var atTopLevel: Bool {
        stack.isEmpty || (stack.count == 1 && stack[0] == "HealthData")
    }

    func handle(_ event: XMLEvent, at position: XMLPosition) {
        switch event {
        case .start(let name, let attributes):
            start(name, attributes, position)
            stack.append(name)
        case .end(let name):
            stack.removeLast()
            end(name, position)
        case .text:
            break
        }
    }

    private func damage(_ detail: String, _ position: XMLPosition) {
        guard workout != nil, workout?.damage == nil else { return }
        workout?.damage = "\(detail) (\(position))"
    }

    private func date(_ attributes: [XMLAttribute], _ name: String, _ element: String, _ position: XMLPosition) -> Date? {
        guard let text = Self.value(attributes, name) else {
            damage("<\(element)> has no \(name)", position)
            return nil
        }
        guard let date = HealthDate.parse(text) else {
            damage("<\(element)> \(name) '\(text)' is not a date (yyyy-MM-dd HH:mm:ss ±hhmm)", position)
            return nil
        }
        return date
    }

    /// A number attribute; a present value that is not a finite number damages the workout.
    private func number(_ attributes: [XMLAttribute], _ name: String, _ element: String, _ position: XMLPosition) -> Double? {
        guard let text = Self.value(attributes, name) else { return nil }
        guard let value = Double(text), value.isFinite else {
            damage("<\(element)> \(name) '\(text)' is not a number", position)
            return nil
        }
        return value
    }

    /// Seconds of a `duration` with its `durationUnit` (minutes when absent: the export's default).
    private func duration(_ attributes: [XMLAttribute], _ element: String, _ position: XMLPosition) -> TimeInterval? {
        guard let value = number(attributes, "duration", element, position) else { return nil }
        let unit = Self.value(attributes, "durationUnit") ?? "min"
        let scale: Double
        switch unit {
        case "min": scale = 60
        case "s", "sec": scale = 1
        case "hr", "h": scale = 3600
        case "ms": scale = 0.001
        default:
            damage("<\(element)> durationUnit '\(unit)' is unknown", position)
            return nil
        }
        guard value >= 0 else {
            damage("<\(element)> has a negative duration \(value) \(unit)", position)
            return nil
        }
        return value * scale
    }

    private func start(_ name: String, _ attributes: [XMLAttribute], _ position: XMLPosition) {
        if name == "HealthData", stack.isEmpty {
            sawExport = true
            locale = Self.value(attributes, "locale")
            return
        }
        if atTopLevel {
            switch name {
            case "Record": startRecord(attributes, position)
            case "Workout":
                sawExport = true
                guard pass != .records else { return }
                startWorkout(attributes, position)
            case "Correlation": correlations += 1
            case "ExportDate", "Me": break
            default: otherElements += 1
            }
            return
        }
        if recoveryRecord != nil, name == "MetadataEntry", stack.last == "Record" {
            if let key = Self.value(attributes, "key"), let value = Self.value(attributes, "value") {
                recoveryRecord?.metadata[key] = value
            }
            return
        }
        guard pass != .records, workout != nil, stack.count >= 1 else { return }
        let parent = stack.last ?? ""
        switch name {
        case "MetadataEntry":
            guard let key = Self.value(attributes, "key") else { return }
            let value = Self.value(attributes, "value") ?? ""
            switch parent {
            case "WorkoutEvent": event?.0.metadata[key] = value
            case "WorkoutActivity": activity?.metadata[key] = value
            case "Workout": workout?.metadata[key] = value
            default: break
            }
        case "WorkoutEvent":
            guard let type = Self.value(attributes, "type") else {
                damage("<WorkoutEvent> has no type", position)
                return
            }
            guard let when = date(attributes, "date", name, position) else { return }
            event = (
                HealthEvent(type: type, date: when, duration: duration(attributes, name, position) ?? 0, metadata: [:]),
                parent == "WorkoutActivity"
            )
        case "WorkoutActivity":
            guard let from = date(attributes, "startDate", name, position),
                let to = date(attributes, "endDate", name, position)
            else { return }
            if to < from { damage("<WorkoutActivity> ends before it starts", position) }
            activity = HealthActivity(
                uuid: Self.value(attributes, "uuid"), start: from, end: to, duration: duration(attributes, name, position))
        case "WorkoutStatistics":
            guard let type = Self.value(attributes, "type") else {
                damage("<WorkoutStatistics> has no type", position)
                return
            }
            let statistic = HealthStatistic(
                type: type, start: Self.value(attributes, "startDate").flatMap(HealthDate.parse),
                end: Self.value(attributes, "endDate").flatMap(HealthDate.parse),
                sum: number(attributes, "sum", name, position), average: number(attributes, "average", name, position),
                minimum: number(attributes, "minimum", name, position),
                maximum: number(attributes, "maximum", name, position), unit: Self.value(attributes, "unit"))
            if parent == "WorkoutActivity" {
                activity?.statistics.append(statistic)
            } else {
                workout?.statistics.append(statistic)
            }
        case "WorkoutRoute":
            route = HealthRoute(
                start: Self.value(attributes, "startDate").flatMap(HealthDate.parse),
                end: Self.value(attributes, "endDate").flatMap(HealthDate.parse))
        case "FileReference":
            route?.file = Self.value(attributes, "path")
        case "Location":
            guard route != nil, let when = date(attributes, "date", name, position),
                let latitude = number(attributes, "latitude", name, position),
                let longitude = number(attributes, "longitude", name, position)
            else { return }
            let point = RoutePoint(
                date: when, latitude: latitude, longitude: longitude, altitude: number(attributes, "altitude", name, position),
                speed: number(attributes, "speed", name, position).flatMap { $0 >= 0 ? $0 : nil },
                course: number(attributes, "course", name, position).flatMap { $0 >= 0 ? $0 : nil },
                horizontalAccuracy: number(attributes, "horizontalAccuracy", name, position))
            if point.isValid { route?.locations.append(point) } else { damage("a route <Location> is not a place on Earth", position) }
        default:
            break
        }
    }

    private func end(_ name: String, _ position: XMLPosition) {
        if atTopLevel {
            switch name {
            case "Workout":
                if var finished = workout {
                    finished.span?.end = position.offset
                    if finished.end < finished.start, finished.damage == nil {
                        finished.damage = "the workout ends before it starts (\(finished.location))"
                    }
                    onWorkout?(finished)
                }
                workout = nil
            case "Record":
                if let recovery = recoveryRecord { recoveries.append(recovery) }
                recoveryRecord = nil
            default: break
            }
            return
        }
        guard pass != .records, workout != nil else { return }
        switch name {
        case "WorkoutEvent":
            if let (finished, inActivity) = event {
                if inActivity { activity?.events.append(finished) } else { workout?.events.append(finished) }
            }
            event = nil
        case "WorkoutActivity":
            if let finished = activity { workout?.activities.append(finished) }
            activity = nil
        case "WorkoutRoute":
            if let finished = route { workout?.routes.append(finished) }
            route = nil
        default: break
        }
    }

    private func startWorkout(_ attributes: [XMLAttribute], _ position: XMLPosition) {
        let location = HealthLocation(line: position.line, column: position.column)
        let type = Self.value(attributes, "workoutActivityType") ?? ""
        var started = HealthWorkout(
            location: location, activityType: type, duration: nil,
            sourceName: Self.value(attributes, "sourceName") ?? Self.value(attributes, "source") ?? "",
            sourceVersion: Self.value(attributes, "sourceVersion"), device: Self.value(attributes, "device"),
            start: .distantPast, end: .distantPast)
        started.span = (tagStart, position.offset)
        workout = started
        if type.isEmpty { damage("<Workout> has no workoutActivityType", position) }
        if let from = date(attributes, "startDate", "Workout", position) { workout?.start = from }
        if let to = date(attributes, "endDate", "Workout", position) { workout?.end = to }
        // Read first: a bad duration damages the workout, which must not be under modification then.
        let stated = duration(attributes, "Workout", position)
        workout?.duration = stated
        if let value = number(attributes, "totalDistance", "Workout", position) {
            workout?.totalDistance = (value, Self.value(attributes, "totalDistanceUnit") ?? "km")
        }
        if let value = number(attributes, "totalEnergyBurned", "Workout", position) {
            workout?.totalEnergy = (value, Self.value(attributes, "totalEnergyBurnedUnit") ?? "kcal")
        }
        started = workout ?? started
        if started.start == .distantPast || started.end == .distantPast {
            let existing = workout?.damage
            workout?.damage = existing ?? "the workout has no start or end (\(position))"
        }
    }

    private func startRecord(_ attributes: [XMLAttribute], _ position: XMLPosition) {
        sawExport = true
        records += 1
        guard pass != .workouts else { return }
        let type = Self.value(attributes, "type") ?? ""
        if type == "HKQuantityTypeIdentifierHeartRateRecoveryOneMinute" {
            guard let value = Self.value(attributes, "value").flatMap(Double.init), value.isFinite,
                let when = Self.value(attributes, "startDate").flatMap(HealthDate.parse)
            else {
                unreadableRecords += 1
                return
            }
            recoveryRecord = HealthRecoveryRecord(
                value: value, date: when, source: Self.value(attributes, "sourceName") ?? "", metadata: [:])
            return
        }
        guard let onRecord, let quantityType = QuantityType(healthKitIdentifier: type) else { return }
        guard let text = Self.value(attributes, "value"), let value = Double(text), value.isFinite,
            let from = Self.value(attributes, "startDate").flatMap(HealthDate.parse),
            let to = Self.value(attributes, "endDate").flatMap(HealthDate.parse), to >= from
        else {
            unreadableRecords += 1
            return
        }
        let unit = Self.value(attributes, "unit") ?? ""
        guard let canonical = HealthUnits.canonicalValue(value, unit: unit, type: quantityType) else {
            unreadableRecords += 1
            return
        }
        onRecord(
            HealthRecord(type: quantityType, value: canonical, start: from, end: to, source: 0),
            Self.value(attributes, "sourceName") ?? "")
    }
}

/// What `HealthExportScanner.scanRecord` made of one top-level `Record` element.
enum ScannedRecord {
    /// A record of a type the pass does not read: counted only.
    case other
    /// A record of a known type whose value, unit or dates cannot be read: left out, counted.
    case unreadable
    /// A record of a known type and the name of its source.
    case quantity(HealthRecord, source: String)
}

/// What a record's `type` names, for `scanRecord`.
enum RecordKind {
    case other
    /// A heart-rate recovery record: read from its events (its metadata is kept).
    case recovery
    case quantity(QuantityType)
}

/// A value made from an attribute's bytes, kept with those bytes (compared before the value is made again).
struct LastRead<Value> {
    var bytes: [UInt8] = []
    var known = false
    var value: Value

    init(value: Value) {
        self.value = value
    }

    /// The value of `source[range]`: the last one when the bytes are the same, else `make(text)`.
    mutating func value(
        _ source: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ make: (String) -> Value
    ) -> Value {
        let count = range.count
        if known, bytes.count == count,
            bytes.withUnsafeBufferPointer({ kept in
                guard let base = source.baseAddress, let keptBase = kept.baseAddress else { return count == 0 }
                return memcmp(keptBase, base + range.lowerBound, count) == 0
            })
        {
            return value
        }
        let slice = UnsafeBufferPointer(rebasing: source[range])
        bytes = Array(slice)
        known = true
        value = make(String(decoding: slice, as: UTF8.self))
        return value
    }
}

extension HealthExportScanner {
    /// Whether the next element, if it is a `Record`, is one this pass reads at the top level (inside
    /// `HealthData`), where `scanRecord` may read it.
    var readsRecordsHere: Bool {
        pass != .workouts && workout == nil && stack.count == 1 && stack[0] == "HealthData"
    }

    /// Reads a plain top-level `Record` element from `bytes` (white space first), straight from the parser's
    /// buffer: how many bytes it took, and what its events would have made of it (`take` then counts it and
    /// hands it over as `handle` would). Nil for anything else, left to the parser's events (which make the same
    /// record, or whose error says what is wrong and where): another element, a heart-rate recovery record (its
    /// metadata is read), a value the record is read from (`type`, `value`, `unit`, `startDate`, `endDate`,
    /// `sourceName`) with an entity or a control character, a child that is not plain
    /// (`XMLPullParser.skippedElementEnd`), an element that does not end in `bytes`. The tags it takes are checked
    /// by `XMLPullParser.skippedTagLength`, so it takes only what the parser reads without an error.
    func scanRecord(_ bytes: UnsafeBufferPointer<UInt8>) -> (length: Int, value: ScannedRecord)? {
        let count = bytes.count
        var index = 0
        while index < count, XMLPullParser.isSpace(bytes[index]) { index += 1 }
        let open = index
        // `<Record` then a byte that ends the name.
        guard count - open > 8, bytes[open] == UInt8(ascii: "<"), bytes[open + 1] == UInt8(ascii: "R"),
            bytes[open + 2] == UInt8(ascii: "e"), bytes[open + 3] == UInt8(ascii: "c"),
            bytes[open + 4] == UInt8(ascii: "o"), bytes[open + 5] == UInt8(ascii: "r"),
            bytes[open + 6] == UInt8(ascii: "d"), !XMLPullParser.isNameByte(bytes[open + 7])
        else { return nil }
        let most = 32
        let deepest = 16
        return withUnsafeTemporaryAllocation(of: (from: Int, count: Int).self, capacity: most + deepest) {
            scratch -> (length: Int, value: ScannedRecord)? in
            let names = UnsafeMutableBufferPointer(rebasing: scratch[0..<most])
            // The attributes read, from the tag checked: one with an entity or a control character (which the
            // parser decodes, or reads as a space) is left to the parser.
            var type: Range<Int>?
            var value: Range<Int>?
            var unit: Range<Int>?
            var startDate: Range<Int>?
            var endDate: Range<Int>?
            var sourceName: Range<Int>?
            let checked = withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: most) {
                values -> (length: Int, selfClosing: Bool, attributes: Int)? in
                guard
                    let tag = XMLPullParser.skippedTagLength(
                        bytes, from: open + 7, to: count, names: names, values: values)
                else { return nil }
                for index in 0..<tag.attributes {
                    let range = values[index]
                    let attribute = Self.recordAttribute(bytes, names[index].from, names[index].count)
                    guard attribute == 0 || XMLPullParser.isLiteralValue(bytes, range) else { return nil }
                    switch attribute {
                    case 1: type = range
                    case 2: value = range
                    case 3: unit = range
                    case 4: startDate = range
                    case 5: endDate = range
                    case 6: sourceName = range
                    default: break
                    }
                }
                return tag
            }
            guard let tag = checked else { return nil }
            var length = open + 7 + tag.length
            if !tag.selfClosing {
                let stack = UnsafeMutableBufferPointer(rebasing: scratch[most..<(most + deepest)])
                guard
                    let end = XMLPullParser.skippedElementEnd(
                        bytes, from: length, name: (open + 1, 6), names: names, open: stack)
                else { return nil }
                length = end
            }
            let kind = type.map { lastType.value(bytes, $0, Self.kind) } ?? Self.kind("")
            let quantityType: QuantityType
            switch kind {
            case .recovery: return nil
            case .other: return (length, .other)
            case .quantity(let known):
                guard onRecord != nil else { return (length, .other) }
                quantityType = known
            }
            guard let value, let number = HealthGPX.number(bytes, value.lowerBound, value.upperBound), number.isFinite,
                let startDate, let from = HealthDate.parse(bytes: UnsafeBufferPointer(rebasing: bytes[startDate])),
                let endDate, let to = HealthDate.parse(bytes: UnsafeBufferPointer(rebasing: bytes[endDate])), to >= from
            else { return (length, .unreadable) }
            let symbol = unit.map { lastUnit.value(bytes, $0, HealthUnits.unit) } ?? HealthUnits.unit("")
            guard let canonical = symbol?.convert(number, to: quantityType.canonicalUnit) else {
                return (length, .unreadable)
            }
            let source = sourceName.map { lastSource.value(bytes, $0, { $0 }) } ?? ""
            return (
                length,
                .quantity(HealthRecord(type: quantityType, value: canonical, start: from, end: to, source: 0), source: source)
            )
        }
    }

    /// Counts a record `scanRecord` read and hands it over, as its events would.
    func take(_ record: ScannedRecord) {
        sawExport = true
        records += 1
        scannedRecords += 1
        switch record {
        case .other: break
        case .unreadable: unreadableRecords += 1
        case .quantity(let record, let source): onRecord?(record, source)
        }
    }

    /// What a record's `type` names.
    static func kind(_ type: String) -> RecordKind {
        if type == "HKQuantityTypeIdentifierHeartRateRecoveryOneMinute" { return .recovery }
        return QuantityType(healthKitIdentifier: type).map { .quantity($0) } ?? .other
    }

    /// Which attribute a record is read from `bytes[from..<from + count]` names: 1 `type`, 2 `value`, 3 `unit`,
    /// 4 `startDate`, 5 `endDate`, 6 `sourceName`; 0 for any other.
    private static func recordAttribute(_ bytes: UnsafeBufferPointer<UInt8>, _ from: Int, _ count: Int) -> Int {
        func matches(_ literal: StaticString) -> Bool {
            guard literal.utf8CodeUnitCount == count else { return false }
            let pointer = literal.utf8Start
            for offset in 0..<count where bytes[from + offset] != pointer[offset] { return false }
            return true
        }
        switch count {
        case 4: return matches("type") ? 1 : matches("unit") ? 3 : 0
        case 5: return matches("value") ? 2 : 0
        case 7: return matches("endDate") ? 5 : 0
        case 9: return matches("startDate") ? 4 : 0
        case 10: return matches("sourceName") ? 6 : 0
        default: return 0
        }
    }
}

/// Apple's unit symbols in the engine's units.
enum HealthUnits {
    static func unit(_ symbol: String) -> QuantityUnit? {
        switch symbol {
        case "Cal": .kilocalorie
        case "km/hr": .kilometerPerHour
        case "mi/hr": .milePerHour
        case "ms": QuantityUnit(symbol: "ms")
        default: QuantityUnit(symbol: symbol)
        }
    }

    /// `value` in `symbol` converted to `type`'s canonical unit; nil when the unit is unknown or of
    /// another dimension.
    static func canonicalValue(_ value: Double, unit symbol: String, type: QuantityType) -> Double? {
        guard let unit = unit(symbol) else { return nil }
        return unit.convert(value, to: type.canonicalUnit)
    }
}
