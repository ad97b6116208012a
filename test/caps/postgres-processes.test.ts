import { skipWithoutServer } from '../store/postgres-support.js';
import { describeCapLoad } from './capLoad.js';
import { postgresEngine } from './databases.js';
import { describeKilledHolder } from './killedHolder.js';

const skip = await skipWithoutServer('test/caps/postgres-processes.test.ts');

describeCapLoad(postgresEngine, skip);
describeKilledHolder(postgresEngine, skip);
