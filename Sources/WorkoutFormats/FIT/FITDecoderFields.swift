/// Reading the fields of one data message and filling the typed messages.
extension FITParser {
    @inline(__always)
    func slot(_ definition: FITLocalDefinition, _ number: UInt8) -> FITFieldSlot? {
        let index = definition.lookup[Int(number)]
        return index >= 0 ? definition.fields[Int(index)] : nil
    }

    /// The first element of a field as an integer; nil when absent, invalid or not a number.
    @inline(__always)
    func integer(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> Int64? {
        guard let slot = slot(definition, number) else { return nil }
        return element(slot, base + slot.offset, bigEndian: definition.bigEndian)
    }

    /// One element of type `slot.type` at `at` as an integer (floats rounded toward zero).
    @inline(__always)
    func element(_ slot: FITFieldSlot, _ at: Int, bigEndian: Bool) -> Int64? {
        let size = slot.elementSize
        guard slot.size >= size else { return nil }
        let raw = unsigned(at, size, bigEndian: bigEndian)
        let allOnes: UInt64 = size == 8 ? .max : (1 << UInt64(8 * size)) - 1
        switch slot.kind {
        case .unsigned, .bytes:
            if raw == allOnes { return nil }
            return Int64(exactly: raw)
        case .zeroInvalid:
            if raw == 0 { return nil }
            return Int64(exactly: raw)
        case .signed:
            if raw == allOnes >> 1 { return nil }
            let shift = UInt64(64 - 8 * size)
            return Int64(bitPattern: raw << shift) >> Int64(shift)
        case .float:
            if raw == allOnes { return nil }
            let value = size == 4 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : Double(bitPattern: raw)
            guard value.isFinite, abs(value) < 9e18 else { return nil }
            return Int64(value.rounded(.towardZero))
        case .string:
            return nil
        }
    }

    /// The first element of a field divided by `scale` minus `offset`; nil when absent or invalid.
    @inline(__always)
    func number(
        _ definition: FITLocalDefinition, _ base: Int, _ number: UInt8, scale: Double = 1, offset: Double = 0
    )
        -> Double?
    {
        guard let slot = slot(definition, number) else { return nil }
        if slot.kind == .float {
            let size = slot.elementSize
            guard slot.size >= size else { return nil }
            let raw = unsigned(base + slot.offset, size, bigEndian: definition.bigEndian)
            let value = size == 4 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : Double(bitPattern: raw)
            guard value.isFinite else { return nil }
            return value / scale - offset
        }
        guard let value = element(slot, base + slot.offset, bigEndian: definition.bigEndian) else { return nil }
        return Double(value) / scale - offset
    }

    @inline(__always)
    func uint8(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> UInt8? {
        integer(definition, base, number).flatMap { UInt8(exactly: $0) }
    }

    @inline(__always)
    func uint16(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> UInt16? {
        integer(definition, base, number).flatMap { UInt16(exactly: $0) }
    }

    @inline(__always)
    func uint32(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> UInt32? {
        integer(definition, base, number).flatMap { UInt32(exactly: $0) }
    }

    @inline(__always)
    func int32(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> Int32? {
        integer(definition, base, number).flatMap { Int32(exactly: $0) }
    }

    /// Every valid element of an array field as integers (invalid elements are nil).
    func array(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> [Int64?] {
        guard let slot = slot(definition, number) else { return [] }
        let size = slot.elementSize
        let count = slot.size / size
        var values: [Int64?] = []
        values.reserveCapacity(count)
        var element = slot
        element.size = size
        for index in 0..<count {
            values.append(self.element(element, base + slot.offset + index * size, bigEndian: definition.bigEndian))
        }
        return values
    }

    /// A string field (UTF-8 up to the first NUL); nil when empty.
    func string(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8) -> String? {
        guard let slot = slot(definition, number) else { return nil }
        let start = base + slot.offset
        var end = start
        while end < start + slot.size, buffer[end] != 0 { end += 1 }
        guard end > start else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[start..<end]), as: UTF8.self)
    }

    /// `count` values of `bits` bits each packed little-endian (least significant bit first) in a field.
    func packed(_ definition: FITLocalDefinition, _ base: Int, _ number: UInt8, bits: Int) -> [UInt32] {
        guard let slot = slot(definition, number), bits > 0, bits <= 24 else { return [] }
        let start = base + slot.offset
        let count = slot.size * 8 / bits
        var values: [UInt32] = []
        values.reserveCapacity(count)
        let mask = (UInt32(1) << UInt32(bits)) - 1
        for index in 0..<count {
            let bit = index * bits
            let byte = bit / 8
            var word: UInt32 = 0
            for offset in 0..<4 where byte + offset < slot.size {
                word |= UInt32(buffer[start + byte + offset]) << UInt32(8 * offset)
            }
            values.append((word >> UInt32(bit % 8)) & mask)
        }
        return values
    }

    // MARK: data messages

    mutating func decodeData(_ definition: FITLocalDefinition, at base: Int, timestamp compressed: UInt32?) {
        counters[definition.counter] += 1
        file.developerFieldsSkipped += definition.developerFields
        var timestamp = compressed
        if let full = uint32(definition, base, 253) {
            timestamp = full
            lastTimestamp = full
        }
        switch definition.kind {
        case .record: decodeRecord(definition, base, timestamp)
        case .hr: decodeHeartRate(definition, base, timestamp)
        case .length: decodeLength(definition, base, timestamp)
        case .lap: file.laps.append(decodeSummary(definition, base, timestamp, lap: true))
        case .session: file.sessions.append(decodeSummary(definition, base, timestamp, lap: false))
        case .event:
            file.events.append(
                FITEvent(
                    timestamp: timestamp, event: uint8(definition, base, 0), eventType: uint8(definition, base, 1),
                    data: uint32(definition, base, 3) ?? uint16(definition, base, 2).map(UInt32.init),
                    eventGroup: uint8(definition, base, 4)))
        case .activity:
            file.activities.append(
                FITActivity(
                    timestamp: timestamp, totalTimerTime: number(definition, base, 0, scale: 1000),
                    numSessions: uint16(definition, base, 1), type: uint8(definition, base, 2),
                    event: uint8(definition, base, 3), eventType: uint8(definition, base, 4),
                    localTimestamp: uint32(definition, base, 5)))
        case .fileID:
            file.fileIDs.append(
                FITFileID(
                    type: uint8(definition, base, 0), manufacturer: uint16(definition, base, 1),
                    product: uint16(definition, base, 2), serialNumber: uint32(definition, base, 3),
                    timeCreated: uint32(definition, base, 4), number: uint16(definition, base, 5),
                    productName: string(definition, base, 8)))
        case .fileCreator:
            if let version = uint16(definition, base, 0) { file.softwareVersion = version }
        case .sport:
            file.sports.append(
                FITSport(
                    sport: uint8(definition, base, 0), subSport: uint8(definition, base, 1),
                    name: string(definition, base, 3)))
        case .other:
            break
        }
    }

    mutating func decodeRecord(_ definition: FITLocalDefinition, _ base: Int, _ timestamp: UInt32?) {
        var record = FITRecord(timestamp: timestamp)
        record.positionLat = int32(definition, base, 0)
        record.positionLong = int32(definition, base, 1)
        record.altitude =
            number(definition, base, 78, scale: 5, offset: 500) ?? number(definition, base, 2, scale: 5, offset: 500)
        record.heartRate = uint8(definition, base, 3)
        record.cadence = uint8(definition, base, 4)
        record.fractionalCadence = number(definition, base, 53, scale: 128)
        record.distance = number(definition, base, 5, scale: 100)
        record.speed = number(definition, base, 73, scale: 1000) ?? number(definition, base, 6, scale: 1000)
        record.power = uint16(definition, base, 7)
        record.stepLength = number(definition, base, 85, scale: 10_000)
        if slot(definition, 8) != nil {
            // compressed_speed_distance: 12-bit speed (1/100 m/s), 12-bit accumulating distance (1/16 m).
            let parts = packed(definition, base, 8, bits: 12)
            if parts.count >= 2 {
                if record.speed == nil { record.speed = Double(parts[0]) / 100 }
                let accumulated = accumulate(compressedDistance, parts[1], bits: 12)
                compressedDistance = accumulated
                if record.distance == nil { record.distance = Double(accumulated) / 16 }
            }
        }
        if let total = uint32(definition, base, 19) {
            totalCycles = total
            record.totalCycles = total
        } else if let cycles = uint8(definition, base, 18) {
            let accumulated = accumulate(totalCycles, UInt32(cycles), bits: 8)
            totalCycles = accumulated
            record.totalCycles = accumulated
        }
        file.records.append(record)
    }

    /// The protocol's accumulation of a rolling `bits`-bit counter into a full value.
    @inline(__always)
    func accumulate(_ previous: UInt32?, _ raw: UInt32, bits: Int) -> UInt32 {
        guard let previous else { return raw }
        let mask = (UInt32(1) << UInt32(bits)) &- 1
        return previous &+ ((raw &- previous) & mask)
    }

    mutating func decodeHeartRate(_ definition: FITLocalDefinition, _ base: Int, _ timestamp: UInt32?) {
        let beatsPerMinute = array(definition, base, 6)
        var eventTimes: [UInt32] = []
        if slot(definition, 9) != nil {
            for value in array(definition, base, 9) {
                guard let value, let time = UInt32(exactly: value) else { continue }
                heartEventTime = time
                eventTimes.append(time)
            }
        } else if slot(definition, 10) != nil {
            for raw in packed(definition, base, 10, bits: 12) {
                let time = accumulate(heartEventTime, raw, bits: 12)
                heartEventTime = time
                eventTimes.append(time)
            }
        }
        if slot(definition, 253) != nil, let timestamp, let first = eventTimes.first {
            let fraction = number(definition, base, 0, scale: 32768) ?? number(definition, base, 1, scale: 256) ?? 0
            heartAnchor = Double(timestamp) + fraction - Double(first) / 1024
        }
        let count = min(beatsPerMinute.count, eventTimes.count)
        guard let anchor = heartAnchor else {
            file.unanchoredHeartBeats += count
            return
        }
        for index in 0..<count {
            guard let value = beatsPerMinute[index], let bpm = UInt8(exactly: value) else { continue }
            file.heartBeats.append(FITHeartBeat(time: anchor + Double(eventTimes[index]) / 1024, bpm: bpm))
        }
    }

    mutating func decodeLength(_ definition: FITLocalDefinition, _ base: Int, _ timestamp: UInt32?) {
        file.lengths.append(
            FITLength(
                messageIndex: uint16(definition, base, 254), timestamp: timestamp,
                startTime: uint32(definition, base, 2), totalElapsedTime: number(definition, base, 3, scale: 1000),
                totalTimerTime: number(definition, base, 4, scale: 1000), totalStrokes: uint16(definition, base, 5),
                avgSpeed: number(definition, base, 6, scale: 1000), swimStroke: uint8(definition, base, 7),
                avgSwimmingCadence: uint8(definition, base, 9), lengthType: uint8(definition, base, 12)))
    }

    func decodeSummary(_ definition: FITLocalDefinition, _ base: Int, _ timestamp: UInt32?, lap: Bool) -> FITSummary {
        var summary = FITSummary()
        summary.messageIndex = uint16(definition, base, 254)
        summary.timestamp = timestamp
        summary.event = uint8(definition, base, 0)
        summary.eventType = uint8(definition, base, 1)
        summary.startTime = uint32(definition, base, 2)
        summary.totalElapsedTime = number(definition, base, 7, scale: 1000)
        summary.totalTimerTime = number(definition, base, 8, scale: 1000)
        summary.totalDistance = number(definition, base, 9, scale: 100)
        summary.totalCycles = uint32(definition, base, 10)
        summary.totalCalories = uint16(definition, base, 11)
        if lap {
            summary.avgSpeed = number(definition, base, 110, scale: 1000) ?? number(definition, base, 13, scale: 1000)
            summary.maxSpeed = number(definition, base, 111, scale: 1000) ?? number(definition, base, 14, scale: 1000)
            summary.avgHeartRate = uint8(definition, base, 15)
            summary.maxHeartRate = uint8(definition, base, 16)
            summary.avgCadence = uint8(definition, base, 17)
            summary.maxCadence = uint8(definition, base, 18)
            summary.avgPower = uint16(definition, base, 19)
            summary.maxPower = uint16(definition, base, 20)
            summary.intensity = uint8(definition, base, 23)
            summary.trigger = uint8(definition, base, 24)
            summary.sport = uint8(definition, base, 25)
            summary.numLengths = uint16(definition, base, 32)
            summary.firstIndex = uint16(definition, base, 35)
            summary.swimStroke = uint8(definition, base, 38)
            summary.subSport = uint8(definition, base, 39)
            summary.numActiveLengths = uint16(definition, base, 40)
            summary.minHeartRate = uint8(definition, base, 63)
            summary.avgSwolf = uint16(definition, base, 73)
        } else {
            summary.sport = uint8(definition, base, 5)
            summary.subSport = uint8(definition, base, 6)
            summary.avgSpeed = number(definition, base, 124, scale: 1000) ?? number(definition, base, 14, scale: 1000)
            summary.maxSpeed = number(definition, base, 125, scale: 1000) ?? number(definition, base, 15, scale: 1000)
            summary.avgHeartRate = uint8(definition, base, 16)
            summary.maxHeartRate = uint8(definition, base, 17)
            summary.avgCadence = uint8(definition, base, 18)
            summary.maxCadence = uint8(definition, base, 19)
            summary.avgPower = uint16(definition, base, 20)
            summary.maxPower = uint16(definition, base, 21)
            summary.firstIndex = uint16(definition, base, 25)
            summary.numLaps = uint16(definition, base, 26)
            summary.trigger = uint8(definition, base, 28)
            summary.numLengths = uint16(definition, base, 33)
            summary.poolLength = number(definition, base, 44, scale: 100)
            summary.poolLengthUnit = uint8(definition, base, 46)
            summary.numActiveLengths = uint16(definition, base, 47)
            summary.minHeartRate = uint8(definition, base, 64)
            summary.avgSwolf = uint16(definition, base, 80)
        }
        return summary
    }
}
