import Foundation
import Testing
import WorkoutEngine
@testable import WorkoutFormats
import WorkoutModel

/// Automatic segmentation's paddled stretches (`ImportPlanner.paddleSpans`) on synthetic records: where a stretch
/// begins and ends, and which of its records are the boat's.
@Suite("Automatic segmentation: paddled stretches")
struct PaddledStretchTests {
    static let origin: UInt32 = 1_000_000_000

    /// A wrist in a kayak at 2.5 m/s on a lake (altitude 12 m), reading a stroke rate of 40 a minute (3.75 m a
    /// stroke) in one record of ten (the others a cadence of 0, as the fenix 2's).
    static func paddling(_ second: Int, distance: Double) -> FITRecord {
        var record = FITRecord(timestamp: origin + UInt32(second))
        record.speed = 2.5
        record.altitude = 12
        record.distance = distance
        record.cadence = second % 10 == 0 ? 40 : 0
        return record
    }

    static func sorted(_ records: [FITRecord]) -> SortedRecords {
        SortedRecords(records: records, order: records.indices.map { Int32($0) })
    }

    /// 30 minutes paddled (0–1799 s), then a run on the shore's level at 3 m/s whose wrist counts strides (85 a
    /// minute: 2.1 m a cycle) but reads a cadence of 0 in one record of five, as a wrist does now and then. The run's
    /// records of cadence 0 look paddled one by one (no power, no step length, no stride), and the windows reaching
    /// up to 5 minutes into the run still hold 60 % paddled records: the stretch used to end at the last of those
    /// (2100 s, 5 minutes into the run). It ends where the strokes end (`strokesEnd`): its last stroke (1790 s) and the
    /// paddled-looking records right after it, up to the run's first stride (1801 s); the run's first record (1800 s)
    /// reads a cadence of 0 at 3 m/s, as the boat's do, and so is the stretch's last.
    @Test func aStretchEndsWhereTheStrokesEnd() {
        var records: [FITRecord] = []
        var distance = 0.0
        for second in 0..<1800 {
            distance += 2.5
            records.append(Self.paddling(second, distance: distance))
        }
        for second in 1800..<2700 {
            distance += 3
            var record = FITRecord(timestamp: Self.origin + UInt32(second))
            record.speed = 3
            record.altitude = 12
            record.distance = distance
            record.cadence = second % 5 == 0 ? 0 : 85
            records.append(record)
        }
        let spans = ImportPlanner.paddleSpans(Self.sorted(records))
        #expect(spans.count == 1)
        let end = (spans.first?.end ?? 0) - Double(Self.origin)
        #expect(end == 1800, "the stretch ends at \(end) s")
        #expect(spans.first?.start == Double(Self.origin))
    }

    /// Ten minutes standing at the shore (no speed, no cadence: nothing says not a boat) before 30 minutes paddled:
    /// the boat pushed off (`launching`) is at most `longestLaunch` before the first paddled record, not the whole
    /// stand the first window holds (it began at the window's first record, 600 s early).
    @Test func theBoatPushedOffIsBounded() {
        var records: [FITRecord] = []
        for second in 0..<600 {
            var record = FITRecord(timestamp: Self.origin + UInt32(second))
            record.altitude = 12
            records.append(record)
        }
        var distance = 0.0
        for second in 600..<2400 {
            distance += 2.5
            records.append(Self.paddling(second, distance: distance))
        }
        let spans = ImportPlanner.paddleSpans(Self.sorted(records))
        #expect(spans.count == 1)
        let start = (spans.first?.start ?? 0) - Double(Self.origin)
        #expect(start >= 600 - ImportPlanner.longestLaunch && start <= 600, "the stretch begins at \(start) s")
    }

    /// Records with power or a running step length inside a paddled stretch show a ride or a run, not a boat: they
    /// keep their own types (a bike's power and speed, a run's stride), while the paddled records around them are the
    /// boat's. (The stretch used to make every record a boat's but one counting a swim's strokes.)
    @Test func aRecordWithPowerOrAStepInAStretchIsNoBoat() throws {
        let powered = 900..<910
        let stepped = 1200..<1210
        let records = Self.paddledThenRun { second, record in
            if powered.contains(second) {
                record.power = 180
                record.cadence = 0
            }
            if stepped.contains(second) {
                record.stepLength = 1.1
                record.cadence = 68
            }
        }
        let types = try Self.typesBySecond(records)
        for second in powered {
            let own = types[second] ?? []
            #expect(!own.contains(.paddleSportsSpeed) && own.contains(.cyclingPower), "\(second) s: \(own)")
        }
        for second in stepped {
            let own = types[second] ?? []
            #expect(!own.contains(.paddleSportsSpeed) && own.contains(.runningStrideLength), "\(second) s: \(own)")
        }
        // The paddled records around them are the boat's.
        for second in [899, 911, 1199, 1211] {
            #expect(types[second]?.contains(.paddleSportsSpeed) == true, "\(second) s: \(types[second] ?? [])")
        }
    }

    /// 30 minutes paddled at 2.5 m/s (`paddling`, each record then given to `paddled` with its second), then 10
    /// minutes run at 3 m/s with steps that agree with the speed and cadence (1.06 m at 85 a minute).
    static func paddledThenRun(_ paddled: (Int, inout FITRecord) -> Void) -> [FITRecord] {
        var records: [FITRecord] = []
        var distance = 0.0
        for second in 0..<2400 {
            var record: FITRecord
            if second < 1800 {
                distance += 2.5
                record = Self.paddling(second, distance: distance)
                paddled(second, &record)
            } else {
                distance += 3
                record = FITRecord(timestamp: Self.origin + UInt32(second))
                record.speed = 3
                record.altitude = 12
                record.distance = distance
                record.cadence = 85
                record.stepLength = 1.06
            }
            records.append(record)
        }
        return records
    }

    /// The types of each second's samples of `records` imported with automatic segmentation (a generic session 0–1800
    /// s, a running one to the end).
    static func typesBySecond(_ records: [FITRecord]) throws -> [Int: Set<QuantityType>] {
        var file = FITFile()
        var id = FITFileID()
        id.type = 4
        id.manufacturer = 1
        file.fileIDs = [id]
        file.records = records
        func session(_ sport: UInt8, from start: Int, to end: Int) -> FITSummary {
            var summary = FITSummary()
            summary.startTime = origin + UInt32(start)
            summary.timestamp = origin + UInt32(end)
            summary.totalElapsedTime = Double(end - start)
            summary.totalTimerTime = Double(end - start)
            summary.sport = sport
            return summary
        }
        let last = Int((records.last?.timestamp ?? origin) - origin) + 1
        file.sessions = [session(0, from: 0, to: 1800), session(FITProfile.Sport.running, from: 1800, to: last)]
        let plan = try FITImportPlan(file: file, options: ImportOptions(autoSegment: true), seed: 1)
        var types: [Int: Set<QuantityType>] = [:]
        for step in plan.steps {
            guard case .samples(let samples) = step.step else { continue }
            for sample in samples {
                let second = Int(sample.start.timeIntervalSince(FITTime.date(Double(origin))).rounded())
                types[second, default: []].insert(sample.type)
            }
        }
        return types
    }

    /// A step length that the import's running-step test refuses (`ownTypes`: a step of 0, or one that disagrees with
    /// the speed and cadence, as a strap's running dynamics repeat on the bike or in a boat) makes no run, so a
    /// paddled record carrying one is the boat's like the records around it. (The stretch used to leave every record
    /// with a step length its own types: a ride's for these.)
    @Test func aStepTheRunningTestRefusesIsTheBoats() throws {
        let zeroStep = 1500..<1505
        let staleStep = 1505..<1510
        let records = Self.paddledThenRun { second, record in
            if zeroStep.contains(second) { record.stepLength = 0 }
            if staleStep.contains(second) {
                // 1.0 m against the 1.9 m that 2.5 m/s at 40 strides a minute would take.
                record.stepLength = 1.0
                record.cadence = 40
            }
        }
        let types = try Self.typesBySecond(records)
        for second in zeroStep.lowerBound..<staleStep.upperBound {
            let own = types[second] ?? []
            #expect(own.contains(.paddleSportsSpeed) && !own.contains(.cyclingSpeed), "\(second) s: \(own)")
        }
        // The run's steps agree: the run keeps its own types.
        #expect(types[2000]?.contains(.runningStrideLength) == true, "\(types[2000] ?? [])")
    }
}
