// The whole deployment for `azd up`: one resource group with storage, Service Bus, the
// PostgreSQL warehouse, monitoring, a registry, and the three roles as Container Apps,
// each running as its own user-assigned identity with only the data-plane roles it uses.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment; names and tags every resource.')
param environmentName string

@minLength(1)
@description('Azure region of every resource.')
param location string

@description('Object id of the person (or pipeline) running azd: gets what the billing operator commands need, and is the warehouse\'s Microsoft Entra administrator.')
param principalId string = ''

@description('Name of that principal as Microsoft Entra shows it (a user\'s UPN); set by the preprovision hook.')
param principalName string = ''

@allowed([ 'User', 'ServicePrincipal', 'Group' ])
param principalType string = 'User'

@description('Public IP of the machine running azd, let through the warehouse firewall for the postprovision hook (empty: none).')
param developerIpAddress string = ''

@description('Work-queue partitions per priority. The roles get the same BILLING_PARTITIONS.')
@minValue(1)
@maxValue(16)
param partitions int = 4

@description('Initiator replicas kept running when idle: 0 scales to zero (a cold start on the first request), 1 keeps one warm.')
@minValue(0)
@maxValue(3)
param initiatorMinReplicas int = 0

@description('Whether the app already exists (azd sets SERVICE_<NAME>_RESOURCE_EXISTS): then its running image is kept.')
param initiatorExists bool = false
param processorExists bool = false
param controllerExists bool = false

@secure()
@description('API key the initiator accepts (Authorization: Bearer <key>); the preprovision hook makes one.')
param apiKey string

var abbrs = loadJsonContent('abbreviations.json')
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = { 'azd-env-name': environmentName }

// Built-in role definitions (ids are the same in every tenant).
var builtInRoles = {
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1'
  storageBlobDelegator: 'db58b8e5-c6ad-4a2a-8342-4190687cbf4a'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageQueueDataMessageSender: 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a'
  storageQueueDataReader: '19e7f393-937e-4f77-808e-94535e297925'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  storageTableDataReader: '76199698-9eea-4c19-bc75-cec21354c6b6'
  serviceBusDataSender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39'
  serviceBusDataReceiver: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0'
}

// What each role's code does with storage and the bus (tests/infra/test_least_privilege.py
// compares this with the requests each role makes). Queue update (visibility renewal,
// retry later) needs Queue Data Contributor: no narrower built-in role has it. Roles on
// the whole storage account here; blob roles per container in blobGrants.
var grants = {
  initiator: {
    storage: [
      // The user delegation key its upload grants' SAS are signed with (docs/uploads.md):
      // a key is the account's, so this is on the account, and reaches no blob by itself.
      builtInRoles.storageBlobDelegator
      builtInRoles.storageQueueDataMessageSender
      builtInRoles.storageQueueDataReader // the dashboard's queue depths
      builtInRoles.storageTableDataContributor
    ]
    servicebus: [ builtInRoles.serviceBusDataSender ]
  }
  processor: {
    storage: [ builtInRoles.storageQueueDataContributor, builtInRoles.storageTableDataContributor ]
    servicebus: [ builtInRoles.serviceBusDataReceiver ]
  }
  controller: {
    storage: [ builtInRoles.storageQueueDataContributor, builtInRoles.storageTableDataContributor ]
    servicebus: [ builtInRoles.serviceBusDataReceiver ]
  }
  developer: {
    storage: [ builtInRoles.storageQueueDataContributor ]
    servicebus: [ builtInRoles.serviceBusDataSender ]
  }
}

// Blob roles on one container each (modules/storage-container-access.bicep; the containers
// are storage.bicep's): a role reads (Reader) or writes (Contributor) only where its code
// does. Control holds the gate, the work signal, the pricebooks and the order-id counter;
// a processor writes the gate and the work signal too when it finds them missing, as on a
// fresh deployment, where nothing else has written them yet.
var blobGrants = [
  // Uploads: written by senders under the initiator's delegated rights (a SAS cannot
  // exceed its signer's), read by the intake, deleted once taken or expired.
  { principal: 'initiator', container: 'incoming', roles: [ builtInRoles.storageBlobDataContributor ] }
  // Chunk payloads it publishes, and deletes after an intake that stopped half-way.
  { principal: 'initiator', container: 'payloads', roles: [ builtInRoles.storageBlobDataContributor ] }
  { principal: 'initiator', container: 'control', roles: [ builtInRoles.storageBlobDataContributor ] }
  { principal: 'initiator', container: 'results', roles: [ builtInRoles.storageBlobDataReader ] } // a batch's status
  { principal: 'processor', container: 'payloads', roles: [ builtInRoles.storageBlobDataReader ] }
  { principal: 'processor', container: 'results', roles: [ builtInRoles.storageBlobDataContributor ] }
  { principal: 'processor', container: 'control', roles: [ builtInRoles.storageBlobDataContributor ] }
  { principal: 'controller', container: 'results', roles: [ builtInRoles.storageBlobDataReader ] }
  { principal: 'controller', container: 'control', roles: [ builtInRoles.storageBlobDataContributor ] }
]

// On the batch-events topic only (modules/servicebus-topic-access.bicep): the controller's
// relay publishes there; the developer's `billing events tail` reads its `tail` subscription.
var eventGrants = {
  controller: [ builtInRoles.serviceBusDataSender ]
  developer: [ builtInRoles.serviceBusDataReceiver ]
}

var appRoles = [ 'initiator', 'processor', 'controller' ]

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: '${abbrs.resourcesResourceGroups}${environmentName}'
  location: location
  tags: tags
}

module identities 'modules/identity.bicep' = [
  for role in appRoles: {
    scope: rg
    name: 'identity-${role}'
    params: {
      name: '${abbrs.managedIdentityUserAssignedIdentities}${role}-${resourceToken}'
      location: location
      tags: tags
    }
  }
]

module monitoring 'modules/monitoring.bicep' = {
  scope: rg
  name: 'monitoring'
  params: {
    workspaceName: '${abbrs.operationalInsightsWorkspaces}${resourceToken}'
    appInsightsName: '${abbrs.insightsComponents}${resourceToken}'
    location: location
    tags: tags
  }
}

module storage 'modules/storage.bicep' = {
  scope: rg
  name: 'storage'
  params: {
    name: '${abbrs.storageStorageAccounts}${resourceToken}'
    location: location
    tags: tags
    partitions: partitions
  }
}

module servicebus 'modules/servicebus.bicep' = {
  scope: rg
  name: 'servicebus'
  params: {
    name: '${abbrs.serviceBusNamespaces}${resourceToken}'
    location: location
    tags: tags
  }
}

module storageAccess 'modules/storage-access.bicep' = [
  for (role, i) in appRoles: {
    scope: rg
    name: 'storage-access-${role}'
    params: {
      accountName: storage.outputs.name
      principalId: identities[i].outputs.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionIds: grants[role].storage
    }
  }
]

module blobAccess 'modules/storage-container-access.bicep' = [
  for g in blobGrants: {
    scope: rg
    name: 'storage-container-access-${g.principal}-${g.container}'
    params: {
      accountName: storage.outputs.name
      containerName: g.container
      principalId: identities[indexOf(appRoles, g.principal)].outputs.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionIds: g.roles
    }
  }
]

module servicebusAccess 'modules/servicebus-access.bicep' = [
  for (role, i) in appRoles: {
    scope: rg
    name: 'servicebus-access-${role}'
    params: {
      namespaceName: servicebus.outputs.name
      principalId: identities[i].outputs.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionIds: grants[role].servicebus
    }
  }
]

module controllerEventsAccess 'modules/servicebus-topic-access.bicep' = {
  scope: rg
  name: 'servicebus-events-access-controller'
  params: {
    namespaceName: servicebus.outputs.name
    topicName: servicebus.outputs.eventsTopicName
    principalId: identities[indexOf(appRoles, 'controller')].outputs.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionIds: eventGrants.controller
  }
}

module developerEventsAccess 'modules/servicebus-topic-access.bicep' = if (!empty(principalId)) {
  scope: rg
  name: 'servicebus-events-access-developer'
  params: {
    namespaceName: servicebus.outputs.name
    topicName: servicebus.outputs.eventsTopicName
    principalId: principalId
    principalType: principalType
    roleDefinitionIds: eventGrants.developer
  }
}

module developerStorageAccess 'modules/storage-access.bicep' = if (!empty(principalId)) {
  scope: rg
  name: 'storage-access-developer'
  params: {
    accountName: storage.outputs.name
    principalId: principalId
    principalType: principalType
    roleDefinitionIds: grants.developer.storage
  }
}

// The developer's operator commands (hold, release, pricebook upload, poison redrive)
// write the control container only.
module developerBlobAccess 'modules/storage-container-access.bicep' = if (!empty(principalId)) {
  scope: rg
  name: 'storage-container-access-developer-control'
  params: {
    accountName: storage.outputs.name
    containerName: 'control'
    principalId: principalId
    principalType: principalType
    roleDefinitionIds: [ builtInRoles.storageBlobDataContributor ]
  }
}

module developerServicebusAccess 'modules/servicebus-access.bicep' = if (!empty(principalId)) {
  scope: rg
  name: 'servicebus-access-developer'
  params: {
    namespaceName: servicebus.outputs.name
    principalId: principalId
    principalType: principalType
    roleDefinitionIds: grants.developer.servicebus
  }
}

module warehouse 'modules/postgres.bicep' = {
  scope: rg
  name: 'warehouse'
  params: {
    name: '${abbrs.dBforPostgreSQLServers}${resourceToken}'
    location: location
    tags: tags
    administratorObjectId: principalId
    administratorName: principalName
    administratorType: principalType
    developerIpAddress: developerIpAddress
  }
}

module registry 'modules/registry.bicep' = {
  scope: rg
  name: 'registry'
  params: {
    name: '${abbrs.containerRegistryRegistries}${resourceToken}'
    location: location
    tags: tags
    pullerPrincipalIds: [for i in range(0, length(appRoles)): identities[i].outputs.principalId]
  }
}

module environment 'modules/environment.bicep' = {
  scope: rg
  name: 'environment'
  params: {
    name: '${abbrs.appManagedEnvironments}${resourceToken}'
    location: location
    tags: tags
    workspaceName: monitoring.outputs.workspaceName
  }
}

// No password: the database user is the identity's name, and the roles send a Microsoft
// Entra token for it as the password (shared/warehouse/entra.py).
func warehouseUrl(user string, host string, database string) string =>
  'postgresql+psycopg://${user}@${host}:5432/${database}?sslmode=require'

// What every role is told: where things are, as whom to connect, which entities exist.
var commonEnv = [
  { name: 'BILLING_STORAGE_ACCOUNT_URL', value: storage.outputs.blobEndpoint }
  { name: 'BILLING_SERVICEBUS_NAMESPACE', value: servicebus.outputs.fullyQualifiedNamespace }
  { name: 'BILLING_PARTITIONS', value: string(partitions) }
  { name: 'BILLING_PROVISION_RESOURCES', value: 'false' }
  // PostgreSQL's COPY takes JSON results' rows fastest (docs/decisions/0001-results-as-sqlite-images.md)
  { name: 'BILLING_RESULT_FORMAT', value: 'json' }
]

module initiator 'modules/app.bicep' = {
  scope: rg
  name: 'app-initiator'
  params: {
    name: '${abbrs.appContainerApps}initiator-${resourceToken}'
    serviceName: 'initiator'
    location: location
    tags: tags
    exists: initiatorExists
    environmentId: environment.outputs.id
    registryServer: registry.outputs.loginServer
    identityId: identities[0].outputs.id
    identityClientId: identities[0].outputs.clientId
    appInsightsName: monitoring.outputs.appInsightsName
    env: concat(commonEnv, [
      { name: 'BILLING_WAREHOUSE_URL', value: warehouseUrl(identities[0].outputs.name, warehouse.outputs.host, warehouse.outputs.database) }
      { name: 'BILLING_API_KEYS', secretRef: 'api-keys' }
      { name: 'BILLING_HOST', value: '0.0.0.0' }
    ])
    apiKey: apiKey
    external: true
    minReplicas: initiatorMinReplicas
    maxReplicas: 3
    httpConcurrentRequests: 20
  }
}

var workQueues = flatten(map([ 'high', 'normal', 'low' ], p => map(range(0, partitions), i => 'work-${p}-${i}')))

module processor 'modules/app.bicep' = {
  scope: rg
  name: 'app-processor'
  params: {
    name: '${abbrs.appContainerApps}processor-${resourceToken}'
    serviceName: 'processor'
    location: location
    tags: tags
    exists: processorExists
    environmentId: environment.outputs.id
    registryServer: registry.outputs.loginServer
    identityId: identities[1].outputs.id
    identityClientId: identities[1].outputs.clientId
    appInsightsName: monitoring.outputs.appInsightsName
    env: concat(commonEnv, [ { name: 'BILLING_ROLE_ARGS', value: '--processes 1' } ])
    external: false
    minReplicas: 0
    maxReplicas: 10
    // One instance per 64 waiting work items on any work queue (a batch's chunks are
    // spread over its priority's partitions); KEDA brings the first one up from zero.
    storageAccountName: storage.outputs.name
    scaleQueues: workQueues
    scaleQueueLength: 64
  }
}

module controller 'modules/app.bicep' = {
  scope: rg
  name: 'app-controller'
  params: {
    name: '${abbrs.appContainerApps}controller-${resourceToken}'
    serviceName: 'controller'
    location: location
    tags: tags
    exists: controllerExists
    environmentId: environment.outputs.id
    registryServer: registry.outputs.loginServer
    identityId: identities[2].outputs.id
    identityClientId: identities[2].outputs.clientId
    appInsightsName: monitoring.outputs.appInsightsName
    env: concat(commonEnv, [ { name: 'BILLING_WAREHOUSE_URL', value: warehouseUrl(identities[2].outputs.name, warehouse.outputs.host, warehouse.outputs.database) } ])
    external: false
    minReplicas: 0
    maxReplicas: 2
    storageAccountName: storage.outputs.name
    scaleQueues: [ 'results' ]
    scaleQueueLength: 100
  }
}

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = registry.outputs.loginServer
output AZURE_CONTAINER_ENVIRONMENT_NAME string = environment.outputs.name
output BILLING_STORAGE_ACCOUNT_URL string = storage.outputs.blobEndpoint
output BILLING_SERVICEBUS_NAMESPACE string = servicebus.outputs.fullyQualifiedNamespace
output BILLING_WAREHOUSE_HOST string = warehouse.outputs.host
output BILLING_WAREHOUSE_DATABASE string = warehouse.outputs.database
output BILLING_URL string = initiator.outputs.url
// Read by the postprovision hook, which creates a database role for each identity.
output BILLING_WAREHOUSE_ROLES array = [
  for (role, i) in appRoles: {
    role: role
    name: identities[i].outputs.name
    objectId: identities[i].outputs.principalId
  }
]
