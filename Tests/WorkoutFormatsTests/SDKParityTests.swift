import Foundation
import Testing
import WorkoutFormats

/// Our decoder against Garmin's official FIT SDK for Python on the real files: every record, heart
/// beat, length and session as the SDK decodes it.
@Suite("Decoder parity with garmin-fit-sdk")
struct SDKParityTests {
    @Test(arguments: SharedData.names)
    func decodesWhatTheSDKDecodes(name: String) throws {
        let ours = try FITDecoder.decode(try SharedData.bytes(name))
        let sdk = try GarminSDK.verify(["dump", SharedData.fitPath(name)])
        #expect(sdk["integrity"] as? Bool == true)
        #expect((sdk["errors"] as? [Any])?.isEmpty == true)
        let records = (sdk["records"] as? [[String: Any]]) ?? []
        try #require(records.count == ours.records.count, "\(name): \(records.count) records in the SDK")
        func number(_ value: Any?) -> Double? {
            value is NSNull ? nil : (value as? NSNumber)?.doubleValue
        }
        var mismatches: [String] = []
        for (index, (record, theirs)) in zip(ours.records, records).enumerated() {
            func same(_ field: String, _ mine: Double?, tolerance: Double = 0) {
                let other = number(theirs[field])
                guard mine != nil || other != nil else { return }
                if let mine, let other, abs(mine - other) <= tolerance { return }
                if mismatches.count < 10 {
                    mismatches.append("record \(index) \(field): \(mine ?? .nan) vs \(other ?? .nan)")
                }
            }
            same("timestamp", record.timestamp.map(Double.init))
            same("heart_rate", record.heartRate.map(Double.init))
            same("distance", record.distance, tolerance: 0.000_5)
            same("speed", record.speed, tolerance: 0.000_05)
            same("cadence", record.cadence.map(Double.init))
            same("power", record.power.map(Double.init))
            same("lat", record.positionLat.map(Double.init))
            same("lon", record.positionLong.map(Double.init))
            same("total_cycles", record.totalCycles.map(Double.init))
        }
        #expect(mismatches.isEmpty, "\(name): \(mismatches)")

        // hr messages: the SDK's expanded event timestamps, placed by the message with a timestamp.
        var expectedBeats: [(time: Double, bpm: Double)] = []
        var anchor: Double?
        for message in (sdk["hr"] as? [[String: Any]]) ?? [] {
            let bpm = (message["bpm"] as? [Any] ?? []).map(number)
            let times = (message["event_timestamp"] as? [Any] ?? []).compactMap(number)
            if let timestamp = number(message["timestamp"]), let first = times.first {
                anchor = timestamp + (number(message["fraction"]) ?? 0) - first
            }
            guard let anchor else { continue }
            for (value, time) in zip(bpm, times) {
                if let value { expectedBeats.append((anchor + time, value)) }
            }
        }
        #expect(ours.heartBeats.count == expectedBeats.count)
        for (beat, expected) in zip(ours.heartBeats, expectedBeats)
        where abs(beat.time - expected.time) > 0.000_01
            || Double(beat.bpm) != expected.bpm
        {
            Issue.record("\(name): beat \(beat) vs \(expected)")
            break
        }

        let lengths = (sdk["lengths"] as? [[String: Any]]) ?? []
        #expect(lengths.count == ours.lengths.count)
        for (length, theirs) in zip(ours.lengths, lengths) {
            #expect(length.startTime.map(Double.init) == number(theirs["start_time"]))
            #expect(length.totalElapsedTime == number(theirs["total_elapsed_time"]))
            #expect(length.totalStrokes.map(Double.init) == number(theirs["total_strokes"]))
            #expect(length.lengthType.map(Double.init) == number(theirs["length_type"]))
            #expect(length.swimStroke.map(Double.init) == number(theirs["swim_stroke"]))
        }
        let sessions = (sdk["sessions"] as? [[String: Any]]) ?? []
        #expect(sessions.count == ours.sessions.count)
        for (session, theirs) in zip(ours.sessions, sessions) {
            #expect(session.startTime.map(Double.init) == number(theirs["start_time"]))
            #expect(session.totalElapsedTime == number(theirs["total_elapsed_time"]))
            #expect(session.totalTimerTime == number(theirs["total_timer_time"]))
            #expect(session.totalDistance == number(theirs["total_distance"]))
            #expect(session.avgHeartRate.map(Double.init) == number(theirs["avg_heart_rate"]))
            #expect(session.sport.map(Double.init) == number(theirs["sport"]))
            #expect(session.avgSwolf.map(Double.init) == number(theirs["avg_swolf"]))
        }
        #expect(((sdk["laps"] as? [Any]) ?? []).count == ours.laps.count)
        #expect(((sdk["events"] as? [Any]) ?? []).count == ours.events.count)
    }
}
